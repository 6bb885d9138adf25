/**
 * @module A Weights & Biases run through W&B's HTTP API, as its clients use it: the run is created (and its config
 * stored) by the GraphQL mutation `upsertBucket`; history rows, the summary and the end go to the run's
 * `file_stream` (`wandb-history.jsonl`, `wandb-summary.json`, then `complete` with the exit code). One history row
 * per step: what is logged for a step is merged and sent when a later step is logged or the run ends. A resumed run
 * (`wandb.init(id=..., resume="allow")`) first reads the run's state by the query `RunResumeStatus`, as W&B's client
 * does, then continues it: history offsets after the stored lines, the stored summary kept, `_runtime` counted on,
 * and rows of steps at or below the last stored `_step` left out (W&B's client drops steps that do not increase).
 * @see https://github.com/wandb/wandb (wandb/sdk/internal/internal_api.py `upsert_run`, file_stream.py)
 */
import { randomBytes } from "node:crypto";
import { requestJson } from "./http-json.js";
import type { TrackerIdentities, WandbIdentity } from "./run-identity.js";
import { StepRow } from "./step-row.js";
import type { TrackedTable, Tracker } from "./tracker.js";

const UPSERT_BUCKET = `mutation UpsertBucket($name: String, $project: String, $entity: String, $displayName: String,
  $config: JSONString, $jobType: String) {
  upsertBucket(input: {name: $name, modelName: $project, entityName: $entity, displayName: $displayName,
    config: $config, jobType: $jobType}) {
    bucket { id name displayName project { id name entity { id name } } }
    inserted
  }
}`;

const RUN_RESUME_STATUS = `query RunResumeStatus($project: String, $entity: String, $name: String!) {
  model(name: $project, entityName: $entity) {
    id name entity { id name }
    bucket(name: $name, missingOk: true) { id name summaryMetrics displayName historyLineCount historyTail config }
  }
}`;

/** The part of `RunResumeStatus`'s bucket read here; the bucket is null for a run W&B does not have. */
interface ResumeBucket {
  /** JSON text of the run's summary. */
  summaryMetrics: string | null;
  historyLineCount: number | null;
  /** JSON text of an array of the last history lines (each JSON text). */
  historyTail: string | null;
}

/** W&B's config layout: each top-level key as `{value, desc}`. */
export function wandbConfig(config: Record<string, unknown>): Record<string, { value: unknown; desc: null }> {
  return Object.fromEntries(Object.entries(config).map(([key, value]) => [key, { value, desc: null }]));
}

/** One W&B run. */
export class WandbTracker implements Tracker {
  /** The tool, as warnings name it. */
  readonly tool = "wandb";
  /** The run id (`name` in the API): 8 lowercase letters and digits, as W&B generates them, or the resumed run's. */
  readonly runId: string;
  private entity: string;
  private historyLines = 0;
  private summary: Record<string, unknown> = {};
  private readonly startedMs: number;
  /** Seconds the run ran before this process (a resumed run's last `_runtime`). */
  private runtimeBeforeS = 0;
  /** Rows of steps up to this one are not sent (a resumed run's last stored `_step`). */
  private lastStoredStep = Number.NEGATIVE_INFINITY;
  private readonly row = new StepRow();

  /**
   * @param baseUrl - W&B's API, e.g. `https://api.wandb.ai` (`WANDB_BASE_URL`)
   * @param apiKey - the API key (`WANDB_API_KEY`), sent as HTTP Basic `api:<key>`
   * @param project - the project
   * @param entity - the entity; empty: the one W&B answers for the key
   * @param displayName - the run's name as shown (the arclight run name)
   * @param nowMs - the clock of `_timestamp` and `_runtime`
   * @param resume - the run to continue (same project); null: a new run
   */
  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string,
    private readonly project: string,
    entity: string,
    private readonly displayName: string,
    private readonly nowMs: () => number = Date.now,
    private readonly resume: WandbIdentity | null = null,
  ) {
    this.entity = entity === "" && resume !== null ? resume.entity : entity;
    this.runId = resume?.run_id ?? randomBytes(8).toString("hex").slice(0, 8);
    this.startedMs = nowMs();
  }

  /** @returns the run, for `--resume` */
  identity(): TrackerIdentities {
    return { wandb: { run_id: this.runId, entity: this.entity, project: this.project } };
  }

  async start(config: Record<string, unknown>): Promise<void> {
    if (this.resume !== null) await this.readResumeState();
    const variables = {
      name: this.runId,
      project: this.project,
      entity: this.entity === "" ? undefined : this.entity,
      displayName: this.displayName,
      config: JSON.stringify(wandbConfig(config)),
      jobType: "train",
    };
    const answer = await this.graphql(UPSERT_BUCKET, variables);
    const bucket = (answer as { upsertBucket: { bucket: { project: { entity: { name: string } } } } }).upsertBucket
      .bucket;
    this.entity = bucket.project.entity.name;
  }

  /** @returns the `data` of a GraphQL answer; @throws {Error} naming the query when it has errors */
  private async graphql(query: string, variables: Record<string, unknown>): Promise<unknown> {
    const answer = await requestJson(this.url("graphql"), {
      method: "POST",
      headers: this.auth(),
      body: { query, variables },
    });
    const errors = answer.errors as { message: string }[] | undefined;
    const name = /^\s*(?:mutation|query) (\w+)/.exec(query)?.[1];
    if (errors?.length) throw new Error(`${name}: ${errors.map((e) => e.message).join("; ")}`);
    return answer.data;
  }

  /** Reads the stored run (history line count and tail, summary); a run W&B does not have starts empty. */
  private async readResumeState(): Promise<void> {
    const variables = { project: this.project, entity: this.entity === "" ? undefined : this.entity, name: this.runId };
    const answer = await this.graphql(RUN_RESUME_STATUS, variables);
    const bucket = (answer as { model: { bucket: ResumeBucket | null } | null }).model?.bucket ?? null;
    if (bucket === null) return;
    this.historyLines = bucket.historyLineCount ?? 0;
    this.summary = JSON.parse(bucket.summaryMetrics || "{}");
    // As W&B's client: the larger of the summary's `_wandb.runtime` (written at the end) and the last `_runtime`.
    const ended = (this.summary._wandb as { runtime?: number } | undefined)?.runtime;
    const lastRow = typeof this.summary._runtime === "number" ? this.summary._runtime : 0;
    this.runtimeBeforeS = Math.max(typeof ended === "number" ? ended : 0, lastRow);
    const tail = (JSON.parse(bucket.historyTail || "[]") as string[]).map((line) => JSON.parse(line));
    const step = tail.at(-1)?._step;
    if (typeof step === "number") this.lastStoredStep = step;
  }

  async logMetrics(step: number, metrics: Record<string, number>): Promise<void> {
    await this.history(step, metrics);
  }

  /** Logs the table inline in a history row, in W&B's table JSON layout `{_type: "table", columns, data}`. */
  async logTable(key: string, step: number, table: TrackedTable): Promise<void> {
    await this.history(step, { [key]: { _type: "table", columns: table.columns, data: table.rows } });
  }

  async logSummary(key: string, value: string): Promise<void> {
    this.summary[key] = value;
    await this.stream({ files: { "wandb-summary.json": { offset: 0, content: [JSON.stringify(this.summary)] } } });
  }

  /** The last row, the summary with the run's runtime (`_wandb.runtime`, s, as W&B's client keeps it) and the end. */
  async finish(status: "finished" | "failed"): Promise<void> {
    await this.sendRow(this.row.take());
    this.summary._wandb = { runtime: Math.round(this.runtimeS(this.nowMs())) };
    const summary = { "wandb-summary.json": { offset: 0, content: [JSON.stringify(this.summary)] } };
    await this.stream({ files: summary, complete: true, exitcode: status === "finished" ? 0 : 1 });
  }

  /** Adds to the step's `wandb-history.jsonl` row (`_step`, `_runtime` s, `_timestamp` epoch s, of the last add). */
  private async history(step: number, values: Record<string, unknown>): Promise<void> {
    if (step <= this.lastStoredStep) return;
    const nowMs = this.nowMs();
    const row = { ...values, _step: step, _runtime: this.runtimeS(nowMs), _timestamp: nowMs / 1000 };
    await this.sendRow(this.row.add(step, row));
  }

  /** @returns seconds the run has run at `nowMs`, earlier processes of a resumed run included */
  private runtimeS(nowMs: number): number {
    return this.runtimeBeforeS + (nowMs - this.startedMs) / 1000;
  }

  /** Sends a finished step's row and the updated summary. */
  private async sendRow(done: { step: number; values: Record<string, unknown> } | null): Promise<void> {
    if (done === null) return;
    const row = done.values;
    Object.assign(this.summary, row);
    const files = {
      "wandb-history.jsonl": { offset: this.historyLines, content: [JSON.stringify(row)] },
      "wandb-summary.json": { offset: 0, content: [JSON.stringify(this.summary)] },
    };
    await this.stream({ files });
    this.historyLines += 1;
  }

  private async stream(body: Record<string, unknown>): Promise<void> {
    const path = `files/${encodeURIComponent(this.entity)}/${encodeURIComponent(this.project)}/${this.runId}/file_stream`;
    await requestJson(this.url(path), { method: "POST", headers: this.auth(), body });
  }

  private url(path: string): string {
    return new URL(path, this.baseUrl.endsWith("/") ? this.baseUrl : `${this.baseUrl}/`).href;
  }

  private auth(): Record<string, string> {
    return { authorization: `Basic ${Buffer.from(`api:${this.apiKey}`).toString("base64")}` };
  }
}
