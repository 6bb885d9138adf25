/**
 * @module A Weights & Biases run through W&B's HTTP API, as its clients use it: the run is created (and its config
 * stored) by the GraphQL mutation `upsertBucket`; history rows, the summary and the end go to the run's
 * `file_stream` (`wandb-history.jsonl`, `wandb-summary.json`, then `complete` with the exit code). One history row
 * per step: what is logged for a step is merged and sent when a later step is logged or the run ends.
 * @see https://github.com/wandb/wandb (wandb/sdk/internal/internal_api.py `upsert_run`, file_stream.py)
 */
import { randomBytes } from "node:crypto";
import { requestJson } from "./http-json.js";
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

/** W&B's config layout: each top-level key as `{value, desc}`. */
export function wandbConfig(config: Record<string, unknown>): Record<string, { value: unknown; desc: null }> {
  return Object.fromEntries(Object.entries(config).map(([key, value]) => [key, { value, desc: null }]));
}

/** One W&B run. */
export class WandbTracker implements Tracker {
  /** The tool, as warnings name it. */
  readonly tool = "wandb";
  /** The run id (`name` in the API): 8 lowercase letters and digits, as W&B generates them. */
  readonly runId = randomBytes(8).toString("hex").slice(0, 8);
  private entity: string;
  private historyLines = 0;
  private readonly summary: Record<string, unknown> = {};
  private readonly startedMs: number;
  private readonly row = new StepRow();

  /**
   * @param baseUrl - W&B's API, e.g. `https://api.wandb.ai` (`WANDB_BASE_URL`)
   * @param apiKey - the API key (`WANDB_API_KEY`), sent as HTTP Basic `api:<key>`
   * @param project - the project
   * @param entity - the entity; empty: the one W&B answers for the key
   * @param displayName - the run's name as shown (the arclight run name)
   * @param nowMs - the clock of `_timestamp` and `_runtime`
   */
  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string,
    private readonly project: string,
    entity: string,
    private readonly displayName: string,
    private readonly nowMs: () => number = Date.now,
  ) {
    this.entity = entity;
    this.startedMs = nowMs();
  }

  async start(config: Record<string, unknown>): Promise<void> {
    const variables = {
      name: this.runId,
      project: this.project,
      entity: this.entity === "" ? undefined : this.entity,
      displayName: this.displayName,
      config: JSON.stringify(wandbConfig(config)),
      jobType: "train",
    };
    const answer = await requestJson(this.url("graphql"), {
      method: "POST",
      headers: this.auth(),
      body: { query: UPSERT_BUCKET, variables },
    });
    const errors = answer.errors as { message: string }[] | undefined;
    if (errors?.length) throw new Error(`upsertBucket: ${errors.map((e) => e.message).join("; ")}`);
    const bucket = (answer.data as { upsertBucket: { bucket: { project: { entity: { name: string } } } } }).upsertBucket
      .bucket;
    this.entity = bucket.project.entity.name;
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

  async finish(status: "finished" | "failed"): Promise<void> {
    await this.sendRow(this.row.take());
    await this.stream({ complete: true, exitcode: status === "finished" ? 0 : 1 });
  }

  /** Adds to the step's `wandb-history.jsonl` row (`_step`, `_runtime` s, `_timestamp` epoch s, of the last add). */
  private async history(step: number, values: Record<string, unknown>): Promise<void> {
    const nowMs = this.nowMs();
    const row = { ...values, _step: step, _runtime: (nowMs - this.startedMs) / 1000, _timestamp: nowMs / 1000 };
    await this.sendRow(this.row.add(step, row));
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
