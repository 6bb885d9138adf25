/**
 * @module A server on 127.0.0.1 answering the W&B HTTP calls arclight makes as W&B's API answers them (GraphQL
 * `upsertBucket` and `RunResumeStatus`, a run's `file_stream`), checking HTTP Basic `api:<key>`, and keeping what it was sent so tests can
 * read a run back as W&B would hold it (config, history rows, summary, exit code).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A run as the server holds it. */
export interface FakeWandbRun {
  entity: string;
  project: string;
  displayName: string;
  config: Record<string, { value: unknown }>;
  /** `wandb-history.jsonl` lines by offset. */
  history: Record<string, unknown>[];
  summary: Record<string, unknown>;
  exitcode: number | null;
}

/** The fake server. */
export class FakeWandb {
  /** `entity/project/runId` → run. */
  readonly runs = new Map<string, FakeWandbRun>();
  /** The entity a key without one gets. */
  readonly defaultEntity = "arclight-user";

  private constructor(
    private readonly server: Server,
    readonly url: string,
    private readonly apiKey: string,
  ) {}

  /** Starts it on a free port of 127.0.0.1, accepting `apiKey`. */
  static async start(apiKey: string): Promise<FakeWandb> {
    let fake: FakeWandb | undefined;
    const server = createServer((req, res) => void fake!.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    fake = new FakeWandb(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey);
    return fake;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    const expected = `Basic ${Buffer.from(`api:${this.apiKey}`).toString("base64")}`;
    if (req.headers.authorization !== expected) return send(401, { errors: [{ message: "user is not logged in" }] });
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
    const path = new URL(req.url ?? "/", this.url).pathname;
    if (req.method === "POST" && path === "/graphql") return send(200, this.upsertBucket(body));
    const stream = /^\/files\/([^/]+)\/([^/]+)\/([^/]+)\/file_stream$/.exec(path);
    if (req.method === "POST" && stream) {
      const run = this.runs.get(stream.slice(1, 4).map(decodeURIComponent).join("/"));
      if (!run) return send(404, { error: "run not found" });
      this.fileStream(run, body);
      return send(200, { exitcode: null, limits: {} });
    }
    send(404, { error: `no ${req.method} ${path}` });
  }

  private upsertBucket(body: { query: string; variables: Record<string, string> }): unknown {
    if (body.query.includes("RunResumeStatus")) return this.resumeStatus(body.variables);
    if (!body.query.includes("upsertBucket")) return { errors: [{ message: "unknown query" }] };
    const v = body.variables;
    const entity = v.entity ?? this.defaultEntity;
    const key = `${entity}/${v.project}/${v.name}`;
    const inserted = !this.runs.has(key);
    const run = this.runs.get(key) ?? {
      entity,
      project: v.project!,
      displayName: v.displayName ?? v.name!,
      config: {},
      history: [],
      summary: {},
      exitcode: null,
    };
    if (v.config !== undefined) run.config = JSON.parse(v.config);
    this.runs.set(key, run);
    const project = { id: "p1", name: v.project, entity: { id: "e1", name: entity } };
    return {
      data: { upsertBucket: { bucket: { id: "b1", name: v.name, displayName: run.displayName, project }, inserted } },
    };
  }

  /**
   * `model(name, entityName) { bucket(name, missingOk: true) }` as W&B answers it: the summary and config as JSON
   * text, the history line count, the last 10 history lines as JSON text of an array of JSON texts; bucket null for
   * a run it does not have.
   */
  private resumeStatus(v: Record<string, string>): unknown {
    const entity = v.entity ?? this.defaultEntity;
    const run = this.runs.get(`${entity}/${v.project}/${v.name}`);
    const entityObject = { id: "e1", name: entity };
    if (!run) return { data: { model: { id: "p1", name: v.project, entity: entityObject, bucket: null } } };
    const bucket = {
      id: "b1",
      name: v.name,
      displayName: run.displayName,
      summaryMetrics: JSON.stringify(run.summary),
      historyLineCount: run.history.length,
      historyTail: JSON.stringify(run.history.slice(-10).map((row) => JSON.stringify(row))),
      config: JSON.stringify(run.config),
    };
    return { data: { model: { id: "p1", name: v.project, entity: entityObject, bucket } } };
  }

  private fileStream(run: FakeWandbRun, body: { files?: unknown; complete?: boolean; exitcode?: number }): void {
    const files = (body.files ?? {}) as Record<string, { offset: number; content: string[] }>;
    const history = files["wandb-history.jsonl"];
    for (const [i, line] of (history?.content ?? []).entries()) run.history[history!.offset + i] = JSON.parse(line);
    const summary = files["wandb-summary.json"];
    if (summary) run.summary = JSON.parse(summary.content.at(-1)!);
    if (body.complete === true) run.exitcode = body.exitcode ?? null;
  }
}
