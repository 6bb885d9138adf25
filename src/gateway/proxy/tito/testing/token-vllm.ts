/**
 * @module A fake vLLM that tokenises for real, for `tito` tests and the tito bench: a real HTTP server on 127.0.0.1
 * whose `/v1/chat/completions` renders the messages with the model's chat template and tokenises them with the real
 * tokenizer (as vLLM does), and whose `/v1/completions` takes a token-id prompt as is. The "model" is a function from
 * the prompt to the text it writes; the answer's ids are that text tokenised plus the end-of-turn id, in vLLM v0.19's
 * shapes with `return_token_ids` and logprobs. Every body received is kept.
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { ChatInput } from "../../../../wire/chat.js";
import { readTokenizerFolder, type TokenizerFolder } from "../../../../wire/tokenizer-folder.js";
import { chatAnswer, chatChunks } from "../chat-answer.js";

type Json = Record<string, unknown>;

/** What the fake model sees of a request: the prompt ids and their text (special tokens written out). */
export interface FakePrompt {
  ids: number[];
  text: string;
  /** Which endpoint was called. */
  path: "/v1/chat/completions" | "/v1/completions";
}

/**
 * The fake model: the text it generates for a prompt (special tokens such as `<tool_call>` written as text). A list
 * of pieces is tokenised piece by piece, as a model sampling a word in two parts would produce it.
 */
export type FakeModel = (prompt: FakePrompt) => string | readonly string[];

/** One body received. */
export interface TokenVllmCall {
  path: string;
  body: Json;
  /** The prompt ids the fake used: rendered (chat) or as given (completions). */
  promptIds: number[];
}

/** A running token-level fake vLLM. */
export class TokenVllm {
  /** Every call received, in order. */
  readonly received: TokenVllmCall[] = [];
  private responseCounter = 0;

  private constructor(
    private readonly server: Server,
    private readonly folder: TokenizerFolder,
    private model: FakeModel,
  ) {}

  /**
   * Starts a fake on 127.0.0.1, port 0.
   * @param tokenizerDir - the model's tokenizer folder (tokenizer.json, tokenizer_config.json, chat template)
   * @param model - what the fake model writes for a prompt
   */
  static async start(tokenizerDir: string, model: FakeModel): Promise<TokenVllm> {
    let fake: TokenVllm | undefined;
    const server = createServer((req, res) => void fake!.handle(req, res));
    fake = new TokenVllm(server, readTokenizerFolder(tokenizerDir), model);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return fake;
  }

  /** Base URL to register, `http://127.0.0.1:PORT/v1`. */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  /** Replaces the fake model. */
  setModel(model: FakeModel): void {
    this.model = model;
  }

  /** Stops the server. */
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = (req.url ?? "").split("?", 1)[0]!;
    if (req.method !== "POST" || (path !== "/v1/chat/completions" && path !== "/v1/completions")) {
      return send(res, 404, { detail: "Not Found" });
    }
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Json;
    const promptIds = path === "/v1/completions" ? (body.prompt as number[]) : this.renderPrompt(body);
    this.received.push({ path, body, promptIds });
    const completion = this.complete(body, promptIds, path);
    if (path === "/v1/completions") return send(res, 200, completion);
    const chat = chatAnswer(completion, { tool: "hermes", reasoning: "none" }, body.logprobs === true);
    if (body.stream !== true) return send(res, 200, chat);
    const includeUsage = (body.stream_options as Json | undefined)?.include_usage === true;
    const events = chatChunks(chat, includeUsage).map((c) => `data: ${JSON.stringify(c)}\n\n`);
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
    res.end(`${events.join("")}data: [DONE]\n\n`);
  }

  /** vLLM's chat prompt: the template's rendering, tokenised with special tokens recognised. */
  private renderPrompt(body: Json): number[] {
    const chat: ChatInput = {
      messages: body.messages as Json[],
      ...(Array.isArray(body.tools) ? { tools: body.tools as Json[] } : {}),
      ...(body.chat_template_kwargs ? { templateKwargs: body.chat_template_kwargs as Json } : {}),
    };
    return this.folder.tokenizer.encodeWithSpecials(this.folder.template.render(chat, true));
  }

  /** The `/v1/completions` body of one generation (ids = the model's text tokenised + end-of-turn id). */
  private complete(body: Json, promptIds: number[], path: FakePrompt["path"]): Json {
    const { tokenizer, endOfTurn } = this.folder;
    const written = this.model({ ids: promptIds, text: tokenizer.decode(promptIds, false), path });
    const pieces = typeof written === "string" ? [written] : written;
    let ids = [...pieces.flatMap((piece) => tokenizer.encodeWithSpecials(piece)), endOfTurn.id];
    const max = (body.max_completion_tokens ?? body.max_tokens) as number | null | undefined;
    const byLength = typeof max === "number" && ids.length > max;
    if (byLength) ids = ids.slice(0, max);
    const generated = byLength ? ids : ids.slice(0, -1);
    const logprobs = ids.map((_, i) => -0.25 - (i % 7) / 10);
    const tokens = ids.map((id) => tokenizer.decode([id], false));
    const id = `cmpl-fake${++this.responseCounter}`;
    const wantLogprobs = body.logprobs !== undefined && body.logprobs !== null && body.logprobs !== false;
    return {
      id,
      object: "text_completion",
      created: 1_760_000_000,
      model: body.model,
      choices: [
        {
          index: 0,
          text: tokenizer.decode(generated, false),
          logprobs: wantLogprobs ? { text_offset: [], token_logprobs: logprobs, tokens, top_logprobs: null } : null,
          finish_reason: byLength ? "length" : "stop",
          stop_reason: null,
          token_ids: ids,
          prompt_logprobs: null,
          prompt_token_ids: promptIds,
        },
      ],
      usage: {
        prompt_tokens: promptIds.length,
        total_tokens: promptIds.length + ids.length,
        completion_tokens: ids.length,
      },
    };
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}
