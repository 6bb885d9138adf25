/**
 * @module HTTP client of one torch worker: JSON in and out over an undici pool without timeouts (a train step on a
 * big model may take minutes), each answer parsed with its schema, and error answers turned back into the classes
 * the `Engine` contract names (`RangeError`, `CheckpointInvalid`) or a `TorchWorkerError` saying what failed.
 */
import { Agent, request } from "undici";
import type { z } from "zod";
import { CheckpointInvalid } from "../checkpoint-error.js";
import { ErrorAnswerSchema } from "./protocol.js";

/** The worker failed a call: its process is gone, it answered an unexpected error, or an answer did not parse. */
export class TorchWorkerError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "TorchWorkerError";
  }
}

/** Calls one worker. */
export class WorkerClient {
  private readonly agent = new Agent({ headersTimeout: 0, bodyTimeout: 0, connections: 32 });

  /**
   * @param url - the worker's base URL, e.g. `http://127.0.0.1:8100`
   * @param describeExit - says how the worker process ended, when this side started it and it has (for messages)
   */
  constructor(
    readonly url: string,
    private readonly describeExit: () => Promise<string | null> = async () => null,
  ) {}

  /**
   * GETs `path` and parses the answer.
   * @throws {TorchWorkerError} when the worker cannot be reached or answers an error
   */
  async get<T extends z.ZodType>(path: string, schema: T): Promise<z.infer<T>> {
    return this.call("GET", path, undefined, schema);
  }

  /**
   * POSTs `body` to `path` and parses the answer.
   * @param checkpointDir - the directory of a checkpoint call, for `CheckpointInvalid`
   * @throws {RangeError} for the worker's `out_of_range` answers (a prompt or row that does not fit, a bad id)
   * @throws {CheckpointInvalid} for `checkpoint_missing` / `checkpoint_invalid`
   * @throws {TorchWorkerError} when the worker cannot be reached, dies during the call, or answers another error
   */
  async post<T extends z.ZodType>(
    path: string,
    body: unknown,
    schema: T,
    options: { signal?: AbortSignal; checkpointDir?: string } = {},
  ): Promise<z.infer<T>> {
    return this.call("POST", path, body, schema, options);
  }

  /** Closes the connection pool. */
  async close(): Promise<void> {
    await this.agent.close();
  }

  private async call<T extends z.ZodType>(
    method: "GET" | "POST",
    path: string,
    body: unknown,
    schema: T,
    options: { signal?: AbortSignal; checkpointDir?: string } = {},
  ): Promise<z.infer<T>> {
    let answer: { statusCode: number; text: string };
    try {
      const response = await request(`${this.url}${path}`, {
        method,
        dispatcher: this.agent,
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: options.signal,
      });
      answer = { statusCode: response.statusCode, text: await response.body.text() };
    } catch (err) {
      if (options.signal?.aborted) throw err;
      throw new TorchWorkerError(await this.lostMessage(path), { cause: err });
    }
    const json = parseJson(answer.text);
    if (answer.statusCode >= 400) throw this.errorFor(path, answer.statusCode, json, options.checkpointDir);
    const parsed = schema.safeParse(json);
    if (!parsed.success)
      throw new TorchWorkerError(`torch worker ${this.url}${path}: unexpected answer (${parsed.error.message})`);
    return parsed.data;
  }

  private async lostMessage(path: string): Promise<string> {
    const exit = await this.describeExit();
    const how = exit ? `the worker process ${exit}` : "connection failed or lost";
    return `torch worker ${this.url}: ${how} during ${path}`;
  }

  private errorFor(path: string, status: number, json: unknown, checkpointDir = "?"): Error {
    const parsed = ErrorAnswerSchema.safeParse(json);
    if (!parsed.success) return new TorchWorkerError(`torch worker ${this.url}${path}: HTTP ${status}`);
    const { detail, code } = parsed.data;
    const text = typeof detail === "string" ? detail : detail.map((d) => `${d.loc.join(".")}: ${d.msg}`).join("; ");
    if (code === "out_of_range") return new RangeError(text);
    // The worker's message already starts with "checkpoint DIR: "; CheckpointInvalid adds that itself.
    const reason = text.replace(/^checkpoint .*?: /, "");
    if (code === "checkpoint_missing") return new CheckpointInvalid(checkpointDir, "missing", reason);
    if (code === "checkpoint_invalid") return new CheckpointInvalid(checkpointDir, "invalid", reason);
    return new TorchWorkerError(`torch worker ${this.url}${path}: HTTP ${status}: ${text}`);
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
