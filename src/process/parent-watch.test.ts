/**
 * Which parent a process ends with (`parent-watch.ts`), and a real `npx`-style chain: npm's `sh -c` killed, the
 * command under it stops by itself.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { PARENT_PID_ENV, watchedParentPid } from "./parent-watch.js";

describe("watchedParentPid", () => {
  it("takes ARCLIGHT_PARENT_PID first, then the parent under npx / npm exec, and nothing otherwise", () => {
    expect(watchedParentPid({ [PARENT_PID_ENV]: "123", npm_command: "exec" }, 77)).toBe(123);
    expect(watchedParentPid({ [PARENT_PID_ENV]: "1" }, 77)).toBeUndefined();
    expect(watchedParentPid({ [PARENT_PID_ENV]: "x" }, 77)).toBeUndefined();
    expect(watchedParentPid({ npm_command: "exec" }, 77)).toBe(77);
    // A user's own npm script may background a server on purpose (`arclight gateway &`): not watched.
    expect(watchedParentPid({ npm_command: "run-script" }, 77)).toBeUndefined();
    expect(watchedParentPid({}, 77)).toBeUndefined();
    expect(watchedParentPid({ npm_command: "exec" }, 1)).toBeUndefined();
  });
});

describe("stopWhenParentGone under npx", () => {
  let shell: ChildProcess | undefined;
  afterEach(() => shell?.kill("SIGKILL"));

  it("a process whose npm-exec shell dies gets SIGTERM; one whose ARCLIGHT_PARENT_PID is a live non-parent does not", async () => {
    const watcher = (extra: string) => `
      import { stopWhenParentGone } from ${JSON.stringify(new URL("./parent-watch.ts", import.meta.url).pathname)};
      stopWhenParentGone(process.env, 50);
      process.on("SIGTERM", () => { console.log("got SIGTERM"); process.exit(0); });
      console.log("watching " + process.pid); ${extra}
      setTimeout(() => { console.log("timed out"); process.exit(1); }, 4000);`;
    const node = (code: string) =>
      `${JSON.stringify(process.execPath)} --import tsx --input-type=module -e ${shellQuote(code)}`;
    // npm exec runs the command in `sh -c`; the shell keeps a child (a command after it) so it is not replaced by exec.
    shell = spawn("/bin/sh", ["-c", `${node(watcher(""))} & wait`], {
      env: { ...process.env, npm_command: "exec" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    shell.stdout!.on("data", (chunk) => {
      out += String(chunk);
    });
    await expect.poll(() => out, { timeout: 20_000 }).toContain("watching");
    shell.kill("SIGKILL"); // what the shell under npm does with npm's SIGTERM: it dies, passing nothing on
    await expect.poll(() => out, { timeout: 5000 }).toContain("got SIGTERM");

    // Inherited from a grandparent that is alive: this process is not the one it names, so it keeps running.
    const inherited = spawn("/bin/sh", ["-c", `${node(watcher(""))} & wait`], {
      env: { ...process.env, [PARENT_PID_ENV]: String(process.pid) },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let text = "";
    inherited.stdout!.on("data", (chunk) => {
      text += String(chunk);
    });
    await new Promise((resolve) => inherited.once("exit", resolve));
    expect(text).toContain("timed out");
    expect(text).not.toContain("got SIGTERM");
  });
});

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
