/**
 * @module A tracking server on 127.0.0.1 answering the MLflow REST calls arclight makes as MLflow 2.x documents them
 * (experiments get-by-name / create, runs create / get / log-batch / set-tag / update, mlflow-artifacts PUT), keeping what
 * it was sent so tests can read runs back as MLflow would show them.
 * @see https://mlflow.org/docs/latest/api_reference/rest-api.html
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A run as the server holds it. */
export interface FakeMlflowRun {
  info: {
    run_id: string;
    experiment_id: string;
    run_name: string;
    status: string;
    start_time: number;
    end_time?: number;
    artifact_uri: string;
  };
  params: Record<string, string>;
  tags: Record<string, string>;
  /** key → [{value, step, timestamp}] in arrival order. */
  metrics: Record<string, { value: number; step: number; timestamp: number }[]>;
}

/** The fake server. */
export class FakeMlflow {
  /** Experiment name → id. */
  readonly experiments = new Map<string, string>();
  /** Run id → run. */
  readonly runs = new Map<string, FakeMlflowRun>();
  /** Artifact path (`<experiment>/<run>/artifacts/<file>`) → the JSON uploaded there. */
  readonly artifacts = new Map<string, unknown>();
  /** Every request's `METHOD path`, in order. */
  readonly calls: string[] = [];
  /** Answer every call with this status (a server that is down or refuses), when set. */
  failWith: number | null = null;
  /**
   * The artifact root of new runs: `mlflow-artifacts:` (served, the default of `mlflow server` since 2.0), or a path
   * the server does not serve (`mlflow server --no-serve-artifacts` with a local or bucket root, e.g. `./mlruns`).
   */
  artifactRoot = "mlflow-artifacts:";
  /** Whether the mlflow-artifacts routes exist (`--no-serve-artifacts` leaves them out: Flask's 404 page). */
  servesArtifacts = true;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  /** Starts it on a free port of 127.0.0.1. */
  static async start(): Promise<FakeMlflow> {
    let fake: FakeMlflow | undefined;
    const server = createServer((req, res) => void fake!.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    fake = new FakeMlflow(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return fake;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? "/", this.url);
    this.calls.push(`${req.method} ${url.pathname}`);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (this.failWith !== null) return send(this.failWith, { error_code: "INTERNAL_ERROR", message: "down" });
    const text = Buffer.concat(chunks).toString("utf8");
    const body = text === "" ? {} : JSON.parse(text);
    const artifactPrefix = "/api/2.0/mlflow-artifacts/artifacts/";
    if (req.method === "PUT" && url.pathname.startsWith(artifactPrefix)) {
      if (!this.servesArtifacts) {
        res.writeHead(404, { "content-type": "text/html" });
        return void res.end("<!doctype html><title>404 Not Found</title><h1>Not Found</h1>");
      }
      this.artifacts.set(url.pathname.slice(artifactPrefix.length), body);
      return send(200, {});
    }
    const answer = this.route(`${req.method} ${url.pathname}`, url, body);
    send(answer.status, answer.body);
  }

  // biome-ignore lint/suspicious/noExplicitAny: request bodies of several documented shapes, read field by field
  private route(call: string, url: URL, body: Record<string, any>): { status: number; body: unknown } {
    const notFound = (what: string) => ({
      status: 404,
      body: { error_code: "RESOURCE_DOES_NOT_EXIST", message: `${what} not found` },
    });
    const run = () => this.runs.get(body.run_id);
    switch (call) {
      case "GET /api/2.0/mlflow/experiments/get-by-name": {
        const name = url.searchParams.get("experiment_name") ?? "";
        const id = this.experiments.get(name);
        return id === undefined
          ? notFound(`Experiment '${name}'`)
          : { status: 200, body: { experiment: { experiment_id: id, name } } };
      }
      case "POST /api/2.0/mlflow/experiments/create": {
        const id = String(this.experiments.size + 1);
        this.experiments.set(body.name, id);
        return { status: 200, body: { experiment_id: id } };
      }
      case "POST /api/2.0/mlflow/runs/create": {
        const runId = `run${this.runs.size + 1}`;
        const info = {
          run_id: runId,
          experiment_id: body.experiment_id,
          run_name: body.run_name,
          status: "RUNNING",
          start_time: body.start_time,
          artifact_uri: `${this.artifactRoot}/${body.experiment_id}/${runId}/artifacts`,
        };
        const tags = Object.fromEntries((body.tags ?? []).map((t: { key: string; value: string }) => [t.key, t.value]));
        this.runs.set(runId, { info, params: {}, tags, metrics: {} });
        return { status: 200, body: { run: { info, data: {} } } };
      }
      case "GET /api/2.0/mlflow/runs/get": {
        const target = this.runs.get(url.searchParams.get("run_id") ?? "");
        if (!target) return notFound(`Run '${url.searchParams.get("run_id")}'`);
        const pairs = (record: Record<string, string>) =>
          Object.entries(record).map(([key, value]) => ({ key, value }));
        const data = { params: pairs(target.params), tags: pairs(target.tags) };
        return { status: 200, body: { run: { info: target.info, data } } };
      }
      case "POST /api/2.0/mlflow/runs/log-batch": {
        const target = run();
        if (!target) return notFound(`Run '${body.run_id}'`);
        for (const p of body.params ?? []) {
          const had = target.params[p.key];
          if (had !== undefined && had !== p.value) {
            // MLflow's answer to a changed param (params are immutable), the whole batch refused.
            const message =
              `Changing param values is not allowed. Param with key='${p.key}' was already logged with ` +
              `value='${had}' for run ID='${body.run_id}'. Attempted logging new value '${p.value}'.`;
            return { status: 400, body: { error_code: "INVALID_PARAMETER_VALUE", message } };
          }
        }
        for (const p of body.params ?? []) target.params[p.key] = p.value;
        for (const m of body.metrics ?? []) {
          target.metrics[m.key] ??= [];
          target.metrics[m.key]!.push({ value: m.value, step: m.step, timestamp: m.timestamp });
        }
        for (const t of body.tags ?? []) target.tags[t.key] = t.value;
        return { status: 200, body: {} };
      }
      case "POST /api/2.0/mlflow/runs/set-tag": {
        const target = run();
        if (!target) return notFound(`Run '${body.run_id}'`);
        target.tags[body.key] = body.value;
        return { status: 200, body: {} };
      }
      case "POST /api/2.0/mlflow/runs/update": {
        const target = run();
        if (!target) return notFound(`Run '${body.run_id}'`);
        target.info.status = body.status;
        if (body.end_time !== undefined) target.info.end_time = body.end_time;
        return { status: 200, body: { run_info: target.info } };
      }
      default:
        return { status: 404, body: { error_code: "ENDPOINT_NOT_FOUND", message: `no ${call}` } };
    }
  }
}
