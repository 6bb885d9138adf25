/**
 * @module An MLflow run through the tracking server's REST API: the experiment (found by name, else created), a run,
 * the config as params (flattened, dotted keys), every step's metrics by `log-batch`, validation tables as
 * `mlflow.log_table`-style JSON artifacts (when the server proxies artifacts; else tables alone are skipped, with one
 * warning), the checkpoint path as a tag, and the end by `runs/update`. A resumed run reopens its run (`runs/get`,
 * then `runs/update` back to RUNNING), logs only params it does not have yet (MLflow refuses to change a param), and
 * ends it again.
 * @see https://mlflow.org/docs/latest/api_reference/rest-api.html
 */
import type { Logger } from "pino";
import { requestJson, transportError } from "./http-json.js";
import type { MlflowIdentity, TrackerIdentities } from "./run-identity.js";
import type { TrackedTable, Tracker } from "./tracker.js";

/** MLflow's limits per `log-batch` call (REST API docs): 1000 metrics, 100 params. */
const MAX_BATCH_METRICS = 1000;
const MAX_BATCH_PARAMS = 100;
/** Longest param value every MLflow server takes (500 before 2.x raised it); longer ones are cut. */
const MAX_PARAM_CHARS = 500;

/**
 * Flattens a config into MLflow params: nested keys dotted, values as JSON text (strings as they are).
 * @param config - the run's configuration
 * @returns `[key, value]` pairs, values cut to 500 characters (ending in `…`)
 */
export function configParams(config: Record<string, unknown>, prefix = ""): [string, string][] {
  const out: [string, string][] = [];
  for (const [name, value] of Object.entries(config)) {
    const key = prefix === "" ? name : `${prefix}.${name}`;
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      out.push(...configParams(value as Record<string, unknown>, key));
      continue;
    }
    const text = typeof value === "string" ? value : JSON.stringify(value ?? null);
    out.push([key, text.length > MAX_PARAM_CHARS ? `${text.slice(0, MAX_PARAM_CHARS - 1)}…` : text]);
  }
  return out;
}

/** One MLflow run. */
export class MlflowTracker implements Tracker {
  /** The tool, as warnings name it. */
  readonly tool = "mlflow";
  private runId = "";
  private artifactUri = "";
  private loggedTables: { path: string; type: "table" }[] = [];
  /** Why tables are not uploaded (the server serves no artifact store); null while they are. */
  private artifactsOff: string | null = null;

  /**
   * @param trackingUri - the server, `http(s)://host:port` (a trailing `/` is fine)
   * @param experiment - the experiment name
   * @param runName - the run's name (`mlflow.runName`)
   * @param token - bearer token (`MLFLOW_TRACKING_TOKEN`), or empty
   * @param nowMs - the clock of timestamps
   * @param log - where the one warning goes when the server has no artifact store for tables, or a resumed run is
   *   gone or keeps params of other values
   * @param resume - the run to continue (same server and experiment); null: a new run
   */
  constructor(
    private readonly trackingUri: string,
    private readonly experiment: string,
    private readonly runName: string,
    private readonly token = "",
    private readonly nowMs: () => number = Date.now,
    private readonly log?: Pick<Logger, "warn">,
    private readonly resume: MlflowIdentity | null = null,
  ) {}

  /** @returns the run, for `--resume` */
  identity(): TrackerIdentities {
    return { mlflow: { run_id: this.runId, tracking_uri: this.trackingUri, experiment: this.experiment } };
  }

  /** @returns why tables are skipped (no artifact store on the server), or null while they are uploaded */
  tablesSkipped(): string | null {
    return this.artifactsOff;
  }

  /** @returns the run's id once started, else empty */
  id(): string {
    return this.runId;
  }

  async start(config: Record<string, unknown>): Promise<void> {
    if (this.resume !== null && (await this.reopen(this.resume.run_id, config))) return;
    const experimentId = await this.experimentId();
    const created = await this.call("POST", "runs/create", {
      experiment_id: experimentId,
      run_name: this.runName,
      start_time: this.nowMs(),
      tags: [
        { key: "mlflow.runName", value: this.runName },
        { key: "mlflow.source.name", value: "arclight" },
      ],
    });
    const info = (created.run as { info: { run_id: string; artifact_uri?: string } }).info;
    this.runId = info.run_id;
    this.artifactUri = info.artifact_uri ?? "";
    await this.logParams(configParams(config));
  }

  /**
   * Continues a run: `runs/get` (its artifact URI, params and logged tables), `runs/update` to RUNNING, and the
   * config's params the run does not have. Params it has with another value stay (MLflow refuses to change one),
   * with one warning naming them.
   * @returns false when the server does not have the run (a new one is created then, with a warning)
   */
  private async reopen(runId: string, config: Record<string, unknown>): Promise<boolean> {
    const { ok, status, body } = await this.get("runs/get", { run_id: runId });
    if (!ok && body.error_code === "RESOURCE_DOES_NOT_EXIST") {
      this.log?.warn({ tracker: this.tool, run_id: runId }, "MLflow run to resume is gone; starting a new MLflow run");
      return false;
    }
    if (!ok) throw new Error(`GET /api/2.0/mlflow/runs/get answered ${status}: ${JSON.stringify(body).slice(0, 300)}`);
    type KeyValue = { key: string; value: string };
    const run = body.run as {
      info: { run_id: string; artifact_uri?: string };
      data: { params?: KeyValue[]; tags?: KeyValue[] };
    };
    this.runId = run.info.run_id;
    this.artifactUri = run.info.artifact_uri ?? "";
    const had = new Map((run.data.params ?? []).map((p) => [p.key, p.value]));
    const logged = (run.data.tags ?? []).find((t) => t.key === "mlflow.loggedArtifacts");
    this.loggedTables = logged === undefined ? [] : JSON.parse(logged.value);
    await this.call("POST", "runs/update", { run_id: this.runId, status: "RUNNING" });
    const params = configParams(config);
    const changed = params.filter(([key, value]) => had.has(key) && had.get(key) !== value).map(([key]) => key);
    if (changed.length > 0) {
      this.log?.warn(
        { tracker: this.tool, params: changed },
        "MLflow keeps a resumed run's params as first logged; these differ in the config now",
      );
    }
    await this.logParams(params.filter(([key]) => !had.has(key)));
    return true;
  }

  /** Logs params, up to 100 a call. */
  private async logParams(pairs: [string, string][]): Promise<void> {
    const params = pairs.map(([key, value]) => ({ key, value }));
    for (let i = 0; i < params.length; i += MAX_BATCH_PARAMS) {
      await this.call("POST", "runs/log-batch", { run_id: this.runId, params: params.slice(i, i + MAX_BATCH_PARAMS) });
    }
  }

  async logMetrics(step: number, metrics: Record<string, number>): Promise<void> {
    const timestamp = this.nowMs();
    const all = Object.entries(metrics).map(([key, value]) => ({ key, value, timestamp, step }));
    for (let i = 0; i < all.length; i += MAX_BATCH_METRICS) {
      await this.call("POST", "runs/log-batch", { run_id: this.runId, metrics: all.slice(i, i + MAX_BATCH_METRICS) });
    }
  }

  /**
   * Uploads the table as `<key>/step_<step>.json` in pandas' split layout (`{columns, data}`), as `mlflow.log_table`
   * writes it, and lists it in the `mlflow.loggedArtifacts` tag so the UI's evaluation view shows it. Needs a server
   * that proxies artifacts (`mlflow-artifacts:` artifact URI, the default of `mlflow server` since 2.0). A server
   * without one (another artifact URI, or an upload it refuses) gets no tables from then on, with one warning; its
   * metrics, params, tags and run status go on.
   */
  async logTable(key: string, step: number, table: TrackedTable): Promise<void> {
    if (this.artifactsOff !== null) return;
    const prefix = "mlflow-artifacts:/";
    if (!this.artifactUri.startsWith(prefix)) {
      return this.skipTables(`artifact URI ${this.artifactUri || "(none)"} is not served by the tracking server`);
    }
    const path = `${key}/step_${step}.json`;
    const location = `${this.artifactUri.slice(prefix.length).replace(/^\/+/, "")}/${path}`;
    const url = new URL(`api/2.0/mlflow-artifacts/artifacts/${location}`, this.base());
    try {
      await requestJson(url.href, {
        method: "PUT",
        headers: this.auth(),
        body: { columns: table.columns, data: table.rows },
      });
    } catch (err) {
      return this.skipTables((err as Error).message);
    }
    this.loggedTables.push({ path, type: "table" });
    await this.call("POST", "runs/set-tag", {
      run_id: this.runId,
      key: "mlflow.loggedArtifacts",
      value: JSON.stringify(this.loggedTables),
    });
  }

  /** Turns table uploads off for the rest of the run, warning once. */
  private skipTables(reason: string): void {
    this.artifactsOff = reason;
    this.log?.warn(
      { tracker: this.tool, reason },
      "MLflow server has no artifact store for this run: tables are not uploaded; metrics, params and status go on",
    );
  }

  async logSummary(key: string, value: string): Promise<void> {
    await this.call("POST", "runs/set-tag", { run_id: this.runId, key: `arclight.${key}`, value });
  }

  async finish(status: "finished" | "failed"): Promise<void> {
    if (this.runId === "") return;
    await this.call("POST", "runs/update", {
      run_id: this.runId,
      status: status === "finished" ? "FINISHED" : "FAILED",
      end_time: this.nowMs(),
    });
  }

  /** The experiment's id: looked up by name, created when the server answers RESOURCE_DOES_NOT_EXIST. */
  private async experimentId(): Promise<string> {
    const { ok, status, body } = await this.get("experiments/get-by-name", { experiment_name: this.experiment });
    const experiment = body.experiment as { experiment_id: string } | undefined;
    if (ok && experiment) return experiment.experiment_id;
    if (body.error_code !== "RESOURCE_DOES_NOT_EXIST") {
      throw new Error(
        `GET /api/2.0/mlflow/experiments/get-by-name answered ${status}: ${JSON.stringify(body).slice(0, 300)}`,
      );
    }
    const created = await this.call("POST", "experiments/create", { name: this.experiment });
    return created.experiment_id as string;
  }

  /** A GET whose error answer is read too (`error_code`), not thrown. */
  private async get(path: string, query: Record<string, string>) {
    const url = new URL(`api/2.0/mlflow/${path}`, this.base());
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    const res = await fetch(url, { headers: this.auth(), signal: AbortSignal.timeout(30_000) }).catch((err) => {
      throw transportError("GET", url, err);
    });
    const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    return { ok: res.ok, status: res.status, body };
  }

  private call(method: "GET" | "POST", path: string, body: unknown): Promise<Record<string, unknown>> {
    return requestJson(new URL(`api/2.0/mlflow/${path}`, this.base()).href, { method, headers: this.auth(), body });
  }

  private base(): string {
    return this.trackingUri.endsWith("/") ? this.trackingUri : `${this.trackingUri}/`;
  }

  private auth(): Record<string, string> {
    return this.token === "" ? {} : { authorization: `Bearer ${this.token}` };
  }
}
