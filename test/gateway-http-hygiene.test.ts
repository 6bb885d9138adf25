/**
 * Scenario: a client opens many sockets and never finishes its headers (one client could hold 2,000
 * stalled sockets). The gateway answers each with 408 and closes it once the headers timeout passes. A real
 * gateway on loopback over a SQLite file; raw TCP sockets.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../src/gateway/testing/serve.js";
import { openStore } from "../src/store/open.js";

let dir: string;
let gw: TestGateway;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "arclight-hygiene-"));
  gw = await startTestGateway({ headers_timeout_seconds: 0.5 }, await openStore(`sqlite:${join(dir, "gw.db")}`));
});
afterAll(async () => {
  await gw.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Opens a socket, sends an unfinished request head, and resolves with what came back when the server closed it. */
function stalledSocket(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "));
    let text = "";
    socket.on("data", (chunk) => {
      text += chunk;
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(text));
  });
}

describe("gateway header timeout", () => {
  it("answers 408 and closes 200 sockets whose headers never finish, and keeps serving", async () => {
    const port = Number(new URL(gw.url).port);
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 200 }, () => stalledSocket(port)));
    const elapsedMs = Date.now() - started;
    expect(answers.filter((a) => a.startsWith("HTTP/1.1 408")).length).toBe(200);
    expect(elapsedMs).toBeLessThan(10_000);
    expect((await gw.call("GET", "/healthz")).status).toBe(200);
  });
});
