/** @module A loopback OpenAI chat server answering with a scripted function (APO tests and bench). */
import { once } from "node:events";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** The part of a chat request a script reads. */
export interface ChatRequest {
  model?: string;
  messages: { role: string; content?: unknown }[];
  [key: string]: unknown;
}

/** What the script answers: message content, an HTTP error status, or a stall (no answer, for timeouts). */
export type ChatAnswer = { content: string } | { status: number; body?: unknown } | { stall: true };

/** A running scripted chat server. */
export interface ChatServer {
  /** OpenAI base URL, `http://127.0.0.1:PORT/v1`. */
  url: string;
  /** Every request body received, in order. */
  readonly requests: ChatRequest[];
  close(): Promise<void>;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function completion(model: string | undefined, content: string, call: number) {
  return {
    id: `chatcmpl-scripted-${call}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: model ?? "scripted",
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  };
}

/** Starts the server; `POST …/chat/completions` calls `script`, anything else answers 404. */
export async function startChatServer(script: (request: ChatRequest, call: number) => ChatAnswer): Promise<ChatServer> {
  const requests: ChatRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || !(req.url ?? "").endsWith("/chat/completions")) {
        sendJson(res, 404, { error: { message: "not found" } });
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as ChatRequest;
      const call = requests.length;
      requests.push(body);
      const answer = script(body, call);
      if ("stall" in answer) return;
      if ("status" in answer) sendJson(res, answer.status, answer.body ?? { error: { message: "scripted error" } });
      else sendJson(res, 200, completion(body.model, answer.content, call));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The text of a request's first system message ("" when none). */
export function systemText(request: ChatRequest): string {
  const system = request.messages.find((m) => m.role === "system");
  return typeof system?.content === "string" ? system.content : "";
}
