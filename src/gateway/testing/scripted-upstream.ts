/**
 * @module Test helper: a real HTTP server on 127.0.0.1 that answers every upstream call with a scripted handler, for
 * the model-server faults the fake vLLM does not play (malformed bodies, `Retry-After`, trickling, huge answers).
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A running scripted upstream. */
export interface ScriptedUpstream {
  /** Base URL to register as a model endpoint, e.g. `http://127.0.0.1:PORT/v1`. */
  url: string;
  /** Number of calls received so far. */
  readonly calls: number;
  /** Closes the server and every open connection. */
  close(): Promise<void>;
}

/**
 * Starts a scripted upstream.
 * @param answer - called once the request body has been read, with the 0-based call number
 */
export async function startScriptedUpstream(
  answer: (req: IncomingMessage, res: ServerResponse, call: number) => void,
): Promise<ScriptedUpstream> {
  let calls = 0;
  const server = createServer((req, res) => {
    const call = calls++;
    req.resume();
    req.on("end", () => answer(req, res, call));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    get calls() {
      return calls;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
