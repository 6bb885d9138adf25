/** `arclight engine serve` as a real child process: serving a fresh tiny model, and refusing an unknown model. */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { EmbeddedEngine } from "../engine/embedded/engine.js";
import { tempDir } from "../testing/temp-dir.js";

const main = fileURLToPath(new URL("./main.ts", import.meta.url));
const children: ChildProcess[] = [];
// Waits for the exits too, so a killed server is gone before the test's temp dir is removed.
afterEach(async () => {
  const live = children.splice(0).filter((child) => child.exitCode === null && child.signalCode === null);
  for (const child of live) child.kill("SIGKILL");
  await Promise.all(live.map((child) => once(child, "exit")));
});

function cli(args: string[]): ChildProcess {
  const child = spawn(process.execPath, ["--import", "tsx", main, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  return child;
}

/** Resolves with the URL from the "engine server listening" log line. */
function listeningUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = "";
    child.stdout?.on("data", (data: Buffer) => {
      buffered += data.toString();
      const match = /"url":"([^"]+)"[^\n]*"msg":"engine server listening"/.exec(buffered);
      if (match?.[1]) resolve(match[1]);
    });
    child.once("exit", (code) => reject(new Error(`exited ${code} before listening: ${buffered}`)));
  });
}

describe("arclight engine serve", () => {
  it("serves a fresh tiny model on the given port and stops on SIGTERM", async () => {
    const child = cli(["engine", "serve", "--model", "new:tiny", "--port", "0", "--model-name", "cli-tiny"]);
    const url = await listeningUrl(child);
    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] };
    expect(models.data[0]?.id).toBe("cli-tiny");
    child.kill("SIGTERM");
    const [code] = await once(child, "exit");
    expect(code).toBe(0);
  });

  it("serves a checkpoint directory under its directory name", async () => {
    const dir = join(tempDir("arclight-cli-"), "my-policy");
    const engine = await EmbeddedEngine.create({ config: "tiny", seed: 1 });
    await engine.saveCheckpoint(dir);
    engine.dispose();
    const child = cli(["engine", "serve", "--model", dir, "--port", "0"]);
    const url = await listeningUrl(child);
    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] };
    expect(models.data[0]?.id).toBe("my-policy");
  });

  it("exits non-zero with a message naming an unknown model path", async () => {
    const child = cli(["engine", "serve", "--model", "/no/such/checkpoint"]);
    let stderr = "";
    child.stderr?.on("data", (data: Buffer) => {
      stderr += data.toString();
    });
    const [code] = await once(child, "exit");
    expect(code).not.toBe(0);
    expect(stderr).toContain("/no/such/checkpoint");
  });

  it("exits 2 with one line naming --port when the port is taken, as the gateway does", async () => {
    const taken = createServer().listen(0, "127.0.0.1");
    await once(taken, "listening");
    const { port } = taken.address() as AddressInfo;
    try {
      const child = cli(["engine", "serve", "--model", "new:tiny", "--port", String(port)]);
      let stderr = "";
      child.stderr?.on("data", (data: Buffer) => {
        stderr += data.toString();
      });
      const [code] = await once(child, "exit");
      expect(code).toBe(2);
      expect(stderr.trim()).toBe(
        `arclight: --host 127.0.0.1 --port ${port}: cannot listen (listen EADDRINUSE: address already in use ` +
          `127.0.0.1:${port})`,
      );
    } finally {
      taken.close();
    }
  });

  it("exits 2 with one line naming --model and what is wrong with an invalid checkpoint config", async () => {
    const dir = tempDir("arclight-cli-");
    writeFileSync(join(dir, "config.json"), '{"x":1}');
    const child = cli(["engine", "serve", "--model", dir, "--port", "0"]);
    let stderr = "";
    child.stderr?.on("data", (data: Buffer) => {
      stderr += data.toString();
    });
    const [code] = await once(child, "exit");
    expect(code).toBe(2);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr.trim()).toMatch(new RegExp(`^arclight: --model ${dir}: config\\.json: vocab: .*x`));
  });

  it("serves with --decode-threads 2 (completions work) and refuses 0 or a torch engine, naming the flag", async () => {
    const child = cli(["engine", "serve", "--model", "new:tiny", "--port", "0", "--decode-threads", "2"]);
    const url = await listeningUrl(child);
    const answers = await Promise.all(
      [1, 2, 3, 4].map(async (seed) => {
        const response = await fetch(`${url}/v1/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "tiny", prompt: "2+2=", max_tokens: 4, seed }),
        });
        return response.status;
      }),
    );
    expect(answers).toEqual([200, 200, 200, 200]);
    child.kill("SIGTERM");
    expect((await once(child, "exit"))[0]).toBe(0);
    for (const [args, message] of [
      [["--decode-threads", "0"], /^arclight: --decode-threads: .*>=1/],
      [["--engine", "torch", "--decode-threads", "2"], /^arclight: --decode-threads 2 with --engine torch/],
    ] as const) {
      const refused = cli(["engine", "serve", "--port", "0", ...args]);
      let stderr = "";
      refused.stderr?.on("data", (data: Buffer) => {
        stderr += data.toString();
      });
      expect((await once(refused, "exit"))[0]).toBe(2);
      expect(stderr.trim()).toMatch(message);
    }
  }, 60_000);

  it("refuses a --seed the engine's generator cannot tell apart (negative, past 32 bits), naming the flag", async () => {
    for (const seed of ["-1", "4294967296"]) {
      const refused = cli(["engine", "serve", "--model", "new:tiny", "--port", "0", "--seed", seed]);
      let stderr = "";
      refused.stderr?.on("data", (data: Buffer) => {
        stderr += data.toString();
      });
      expect((await once(refused, "exit"))[0]).toBe(2);
      expect(stderr.trim()).toBe(`arclight: --seed ${seed}: expected an integer from 0 to 4294967295`);
    }
  }, 60_000);
});
