import type { IncomingMessage, ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import type { ModelRequestData } from "../../protocol/index.js";
import { agentCall, chatRequest } from "../testing/proxy-client.js";
import { type ProxyHarness, startProxyHarness } from "../testing/proxy-harness.js";
import { startScriptedUpstream } from "../testing/scripted-upstream.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A real upstream on 127.0.0.1 that answers every call with `answer` (a broken model server, scripted). */
async function scriptedUpstream(answer: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const upstream = await startScriptedUpstream(answer);
  cleanups.push(() => upstream.close());
  return upstream.url;
}

async function harness(endpoint: string): Promise<{ h: ProxyHarness; rid: string }> {
  const h = await startProxyHarness({ models: [{ model: "policy", endpoint }] });
  cleanups.push(() => h.close());
  return { h, rid: await h.newRollout() };
}

async function onlyEvent(h: ProxyHarness, rid: string): Promise<ModelRequestData> {
  const events = await h.store.listEvents(rid, { eventType: "model_request" });
  expect(events).toHaveLength(1);
  return events[0]!.data as ModelRequestData;
}

/** The proxy's error body: the gateway's `detail` and `code`, and OpenAI's `error` object with the same message. */
function proxyError(detail: string, code: string, type: string): Record<string, unknown> {
  return { detail, code, error: { message: detail, type, param: null, code } };
}

const HEAD = { id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "policy" };
const ROLE = { ...HEAD, prompt_token_ids: [1, 2], choices: [{ index: 0, delta: { role: "assistant", content: "" } }] };
const TOKEN = (text: string, id: number, finish: string | null = null) => ({
  ...HEAD,
  choices: [{ index: 0, delta: { content: text }, finish_reason: finish, token_ids: [id] }],
});

function sse(res: ServerResponse, events: string[]): void {
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
  for (const data of events) res.write(`data: ${data}\n\n`);
  res.end();
}

describe("capture integrity", () => {
  // Skipping a chunk that is not JSON would record the call ok, capture complete, with 2 of the 3 response ids.
  it.each([
    ["truncated JSON", JSON.stringify(TOKEN("b", 11)).slice(0, 40)],
    ["a JSON array", "[11]"],
  ])("records a stream with a malformed chunk (%s) as an error with incomplete capture", async (_what, bad) => {
    const endpoint = await scriptedUpstream((_req, res) =>
      sse(res, [
        JSON.stringify(ROLE),
        JSON.stringify(TOKEN("a", 10)),
        bad,
        JSON.stringify(TOKEN("", 2, "stop")),
        "[DONE]",
      ]),
    );
    const { h, rid } = await harness(endpoint);
    const answer = await agentCall(h, rid, "chat/completions", chatRequest({ stream: true }));
    expect(answer.status).toBe(200);
    expect(answer.events).toContain(bad); // the agent gets what the upstream sent
    const event = await onlyEvent(h, rid);
    expect(event.status).toBe("error");
    expect(event.capture_incomplete).toBe(true);
    expect(event.capture_incomplete_reasons).toContain("stream_chunk_malformed");
  });

  it("records a 200 answer whose body is a JSON array as an error with incomplete capture, and answers 502", async () => {
    const endpoint = await scriptedUpstream((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end("[1, 2, 3]");
    });
    const { h, rid } = await harness(endpoint);
    const answer = await agentCall(h, rid, "chat/completions", chatRequest());
    expect(answer.status).toBe(502);
    expect(answer.json).toEqual(
      proxyError(
        "Upstream of model policy answered 200 with a body that is not a JSON object (application/json)",
        "upstream_bad_answer",
        "server_error",
      ),
    );
    const event = await onlyEvent(h, rid);
    expect(event.status).toBe("error");
    expect(event.response).toBeNull();
    expect(event.capture_incomplete).toBe(true);
    expect(event.capture_incomplete_reasons).toEqual(["response_not_object"]);
  });

  // Relayed as a bare 404 with no body, the answer could not be told from a wrong gateway route.
  it("answers an upstream's empty error answer with a detail naming the model, and records it", async () => {
    const endpoint = await scriptedUpstream((_req, res) => {
      res.writeHead(404);
      res.end();
    });
    const { h, rid } = await harness(endpoint);
    const answer = await agentCall(h, rid, "chat/completions", chatRequest());
    expect(answer.status).toBe(404);
    expect(answer.headers.get("content-type")).toContain("application/json");
    expect(answer.json).toEqual(
      proxyError("Upstream of model policy answered 404 with an empty body", "upstream_empty_body", "not_found_error"),
    );
    const event = await onlyEvent(h, rid);
    expect(event.status).toBe("error");
    expect(event.error).toEqual({
      message: "Upstream of model policy answered 404 with an empty body",
      code: "upstream_empty_body",
    });
  });

  it("still relays an upstream's error answer that has a body byte for byte", async () => {
    const endpoint = await scriptedUpstream((_req, res) => {
      res.writeHead(400, { "content-type": "text/plain" });
      res.end("context too long");
    });
    const { h, rid } = await harness(endpoint);
    const answer = await agentCall(h, rid, "chat/completions", chatRequest());
    expect(answer.status).toBe(400);
    expect(answer.headers.get("content-type")).toContain("text/plain");
    expect(answer.text).toBe("context too long");
  });

  // The agent must not get a 200 (an empty body, or HTML) that the event records as an error, on any route.
  it.each([
    ["an empty body", "", undefined, "an empty body"],
    ["HTML", "<html>login</html>", "text/html", "a body that is not a JSON object (text/html)"],
  ])("answers 502 for an upstream 200 with %s, on chat and the Responses route", async (_what, body, type, said) => {
    const endpoint = await scriptedUpstream((_req, res) => {
      res.writeHead(200, type ? { "content-type": type } : {});
      res.end(body);
    });
    const { h, rid } = await harness(endpoint);
    const detail = `Upstream of model policy answered 200 with ${said}`;
    const chat = await agentCall(h, rid, "chat/completions", chatRequest());
    expect([chat.status, chat.json]).toEqual([502, proxyError(detail, "upstream_bad_answer", "server_error")]);
    const responses = await agentCall(h, rid, "responses", { model: "policy", input: "hi" });
    expect(responses.status).toBe(502);
    expect((responses.json as { error: { message: string } }).error.message).toBe(detail);
    const events = await h.store.listEvents(rid, { eventType: "model_request" });
    // What came back is kept (its first 4,096 characters) for whoever reads the event.
    const recorded =
      body === ""
        ? { message: detail, code: "upstream_bad_answer" }
        : { message: detail, code: "upstream_bad_answer", upstream_body: body };
    expect(events.map((e) => (e.data as ModelRequestData).error)).toEqual([recorded, recorded]);
  });

  it("takes a whitespace-only error body for an empty one", async () => {
    const endpoint = await scriptedUpstream((_req, res) => {
      res.writeHead(404, { "content-type": "application/json" });
      res.end("  \n");
    });
    const { h, rid } = await harness(endpoint);
    const answer = await agentCall(h, rid, "chat/completions", chatRequest());
    expect([answer.status, (answer.json as { code?: string }).code]).toEqual([404, "upstream_empty_body"]);
  });

  // The Responses and Messages routes keep the upstream's reason, not just "upstream answered 400".
  it("gives the Responses route the upstream's plain-text error as its message", async () => {
    const endpoint = await scriptedUpstream((_req, res) => {
      res.writeHead(400, { "content-type": "text/plain" });
      res.end("context length exceeded: 9999 > 4096");
    });
    const { h, rid } = await harness(endpoint);
    const answer = await agentCall(h, rid, "responses", { model: "policy", input: "hi" });
    expect(answer.status).toBe(400);
    expect((answer.json as { error: { message: string } }).error.message).toBe("context length exceeded: 9999 > 4096");
  });
});
