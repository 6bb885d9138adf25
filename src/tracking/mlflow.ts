/**
 * @module An MLflow run through the tracking server's REST API: the experiment (found by name, else created), a run,
 * the config as params (flattened, dotted keys), every step's metrics by `log-batch`, validation tables as
 * `mlflow.log_table`-style JSON artifacts (when the server proxies artifacts; else tables alone are skipped, with one
 * warning), the checkpoint path as a tag, and the end by `runs/update`.
 * @see https://mlflow.org/docs/latest/api_reference/rest-api.html
 */
import type { Logger } from "pino";
import { requestJson, transportError } from "./http-json.js";
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
  private readonly loggedTables: { path: string; type: "table" }[] = [];
  /** Why tables are not uploaded (the server serves no artifact store); null while they are. */
  private artifactsOff: string | null = null;

  /**
   * @param trackingUri - the server, `http(s)://host:port` (a trailing `/` is fine)
   * @param experiment - the experiment name
   * @param runName - the run's name (`mlflow.runName`)
   * @param token - bearer token (`MLFLOW_TRACKING_TOKEN`), or empty
   * @param nowMs - the clock of timestamps
   * @param log - where the one warning goes when the server has no artifact store for tables
   */
  constructor(
    private readonly trackingUri: string,
    private readonly experiment: string,
    private readonly runName: string,
    private readonly token = "",
    private readonly nowMs: () => number = Date.now,
    private readonly log?: Pick<Logger, "warn">,
  ) {}

  /** @returns why tables are skipped (no artifact store on the server), or null while they are uploaded */
  tablesSkipped(): string | null {
    return this.artifactsOff;
  }

  /** @returns the run's id once started, else empty */
  id(): string {
    return this.runId;
  }

  async start(config: Record<string, unknown>): Promise<void> {
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
    const params = configParams(config).map(([key, value]) => ({ key, value }));
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
    const url = new URL("api/2.0/mlflow/experiments/get-by-name", this.base());
    url.searchParams.set("experiment_name", this.experiment);
    const res = await fetch(url, { headers: this.auth(), signal: AbortSignal.timeout(30_000) }).catch((err) => {
      throw transportError("GET", url, err);
    });
    const body = (await res.json().catch(() => ({}))) as {
      experiment?: { experiment_id: string };
      error_code?: string;
    };
    if (res.ok && body.experiment) return body.experiment.experiment_id;
    if (body.error_code !== "RESOURCE_DOES_NOT_EXIST") {
      throw new Error(`GET ${url.pathname} answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
    }
    const created = await this.call("POST", "experiments/create", { name: this.experiment });
    return created.experiment_id as string;
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
