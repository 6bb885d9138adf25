import { spawn, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it, onTestFinished } from "vitest";
import { tempDir } from "../testing/temp-dir.js";
import { gatewayLogger, LOG_BATCH_BYTES, LOG_FLUSH_MS } from "./logger.js";

const lines = (path: string): Record<string, unknown>[] =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe("gatewayLogger", () => {
  it("holds lines until the flush interval, then writes them", async () => {
    const path = join(tempDir("arclight-log-"), "gateway.log");
    writeFileSync(path, "");
    const logger = gatewayLogger("info", path);
    logger.info({ n: 1 }, "first");
    logger.debug("below the level");
    await sleep(20);
    expect(readFileSync(path, "utf8")).toBe("");
    await sleep(LOG_FLUSH_MS * 3);
    expect(lines(path).map((line) => [line.msg, line.n])).toEqual([["first", 1]]);
  });

  it("writes a full batch at once, in order", async () => {
    const path = join(tempDir("arclight-log-"), "gateway.log");
    writeFileSync(path, "");
    const logger = gatewayLogger("info", path);
    const count = Math.ceil(LOG_BATCH_BYTES / 50) + 5;
    for (let n = 0; n < count; n++) logger.info({ n }, "line");
    // No timer yet: the batch went out because it was full.
    await sleep(50);
    const written = lines(path);
    expect(written.length).toBeGreaterThan(0);
    expect(written.map((line) => line.n)).toEqual(written.map((_, i) => i));
    await sleep(LOG_FLUSH_MS * 3);
    expect(lines(path).map((line) => line.n)).toEqual(Array.from({ length: count }, (_, i) => i));
  });

  it("writes a line held behind a stalled reader soon after the reader resumes, not at exit", async () => {
    const logger = new URL("./logger.ts", import.meta.url).pathname;
    // A pipe whose reader starts 1.5 s late. One 100 kB line more than fills it, so its write is blocked in flight
    // while "last" is logged (after a tick) and at every tick until the reader starts; when the write ends, "last" is
    // all that is held, under the 4 KiB batch. (A socket, as `spawn` makes for stdout, answers EAGAIN instead of
    // blocking, which sonic-boom retries: a different path; hence the shell pipe.)
    const script = `import { gatewayLogger } from ${JSON.stringify(logger)};
      const log = gatewayLogger("info");
      log.info({ pad: "x".repeat(100000) }, "big");
      setTimeout(() => log.info("last"), 700);
      setTimeout(() => {}, 10000);`;
    const dir = tempDir("arclight-log-");
    const scriptPath = join(dir, "stall.mjs");
    writeFileSync(scriptPath, script);
    const node = JSON.stringify(process.execPath);
    const startedAt = performance.now();
    const shell = spawn("sh", ["-c", `${node} --import tsx ${JSON.stringify(scriptPath)} | (sleep 1.5; cat)`], {
      detached: true,
    });
    onTestFinished(() => {
      if (shell.pid !== undefined) process.kill(-shell.pid, "SIGKILL");
    });
    let text = "";
    const lastAt = new Promise<number>((resolve) => {
      shell.stdout.on("data", (chunk: Buffer) => {
        text += chunk.toString();
        if (text.includes('"msg":"last"')) resolve(performance.now() - startedAt);
      });
    });
    const seenAfterMs = await Promise.race([lastAt, sleep(8000).then(() => Number.POSITIVE_INFINITY)]);
    // The first tick after the reader starts writes it, not the process's exit (10 s here).
    expect(seenAfterMs).toBeLessThan(6000);
  }, 20_000);

  it("writes the held lines when the process exits, on an uncaught exception too", () => {
    const dir = tempDir("arclight-log-");
    const logger = new URL("./logger.ts", import.meta.url).pathname;
    for (const ending of ["process.exit(0);", 'throw new Error("boom");']) {
      const path = join(dir, `${ending.length}.log`);
      const script = `import { gatewayLogger } from ${JSON.stringify(logger)};
        const log = gatewayLogger("info", ${JSON.stringify(path)});
        log.info("held at exit");
        ${ending}`;
      const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
        encoding: "utf8",
        timeout: 30_000,
      });
      expect(child.status, child.stderr).toBe(ending.startsWith("throw") ? 1 : 0);
      expect(lines(path).map((line) => line.msg)).toEqual(["held at exit"]);
    }
  });
});
