/**
 * @module Test helper: a real HTTP server between the gateway and a real engine server that forwards every call and
 * lets a test rewrite each non-stream JSON answer (a logprob of −9999 or null, token ids lost from a response, …),
 * so bad data reaches the gateway and the trainer the way a misbehaving upstream would send it.
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { request } from "undici";

type Json = Record<string, unknown>;

/** Rewrites one answer; `call` counts the calls from 0 in arrival order. Return the body to send. */
export type Tamper = (body: Json, call: number) => Json;

/** A running tamper server. */
export interface TamperUpstream {
  /** Base URL to register as the endpoint, ending in `/v1`. */
  url: string;
  close(): Promise<void>;
}

/**
 * Starts a tamper server on 127.0.0.1, port 0.
 * @param target - the real upstream's base URL, ending in `/v1`
 * @param tamper - applied to every 2xx JSON answer; streams and errors pass unchanged
 * @returns the server
 */
export async function startTamperUpstream(target: string, tamper: Tamper): Promise<TamperUpstream> {
  const base = target.replace(/\/v1\/?$/, "");
  let calls = 0;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const answer = await request(base + (req.url ?? ""), {
        method: (req.method ?? "GET") as "GET" | "POST",
        headers: { "content-type": String(req.headers["content-type"] ?? "application/json") },
        body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
      });
      const contentType = String(answer.headers["content-type"] ?? "");
      const text = await answer.body.text();
      let out = text;
      if (answer.statusCode < 300 && contentType.includes("application/json")) {
        out = JSON.stringify(tamper(JSON.parse(text) as Json, calls++));
      }
      res.writeHead(answer.statusCode, { "content-type": contentType });
      res.end(out);
    })().catch((err: Error) => {
      res.writeHead(502, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: err.message } }));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
