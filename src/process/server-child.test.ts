import { describe, expect, it } from "vitest";
import { startServerChild } from "./server-child.js";

const node = (script: string) => [process.execPath, "-e", script];
const URL_LINE = /listening on (http:\/\/\S+)/;

describe("startServerChild", () => {
  it("resolves with the URL the child prints, even split across writes, and stops it", async () => {
    const child = await startServerChild({
      argv: node(`process.stdout.write("noise\\nlistening on http://127.0.0."); setTimeout(() =>
        process.stdout.write("1:4321/v1\\n"), 50); setInterval(() => {}, 1000);`),
      urlPattern: URL_LINE,
      what: "test server",
    });
    try {
      expect(child.url).toBe("http://127.0.0.1:4321/v1");
    } finally {
      await child.stop();
    }
    expect(child.process.signalCode).toBe("SIGTERM");
    await child.stop(); // already stopped: returns at once
  });

  it("names the child when it exits before printing its URL", async () => {
    await expect(
      startServerChild({ argv: node("process.exit(3)"), urlPattern: URL_LINE, what: "test server" }),
    ).rejects.toThrow("test server exited (code 3) before listening");
  });

  it("kills a child that prints no URL within the timeout", async () => {
    await expect(
      startServerChild({
        argv: node("setInterval(() => {}, 1000)"),
        urlPattern: URL_LINE,
        what: "slow server",
        startTimeoutMs: 300,
      }),
    ).rejects.toThrow("slow server did not report its URL within 0.3 s");
  });

  it("SIGKILLs a child that ignores SIGTERM once the grace period is over", async () => {
    const child = await startServerChild({
      argv: node(
        `process.on("SIGTERM", () => {}); console.log("listening on http://x/"); setInterval(() => {}, 1000);`,
      ),
      urlPattern: URL_LINE,
      what: "stubborn server",
      stopGraceMs: 200,
    });
    await child.stop();
    expect(child.process.signalCode).toBe("SIGKILL");
  });
});
