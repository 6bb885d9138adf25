/** @module Experiment tracking settings (`tracking:` in the trainer, SFT and APO YAML): W&B, MLflow, TensorBoard. */
import { z } from "zod";

/** Weights & Biases: a run per command, through W&B's HTTP API or written offline for `wandb sync`. */
export const WandbConfigSchema = z
  .strictObject({
    project: z.string().default("").describe("W&B project; empty: no W&B run"),
    entity: z.string().default("").describe("W&B entity (user or team); empty: the API key's default entity"),
    mode: z
      .enum(["online", "offline", "disabled"])
      .default("online")
      .describe(
        "online: log through W&B's HTTP API (base URL WANDB_BASE_URL, default https://api.wandb.ai; key WANDB_API_KEY); " +
          "offline: write the run to WANDB_DIR/wandb/offline-run-* (default: the working directory) for `wandb sync`; " +
          "disabled: no W&B run",
      ),
  })
  .superRefine((wandb, ctx) => {
    if (wandb.project !== "" || wandb.mode === "disabled") return;
    const set = wandb.entity !== "" ? "entity" : wandb.mode === "offline" ? "mode: offline" : null;
    if (set === null) return;
    ctx.addIssue({
      code: "custom",
      path: ["project"],
      message: `not set, but ${set} is: W&B logs nothing without a project; set it (flag --wandb-project)`,
    });
  });

/** @returns whether `text` parses as an http: or https: URL with a host */
function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === "http:" || url.protocol === "https:") && url.host !== "";
  } catch {
    return false;
  }
}

/** MLflow: a run per command, through the tracking server's REST API. */
export const MlflowConfigSchema = z
  .strictObject({
    tracking_uri: z
      .string()
      .superRefine((uri, ctx) => {
        if (uri === "" || isHttpUrl(uri)) return;
        ctx.addIssue({
          code: "custom",
          message: `must be the MLflow tracking server's http:// or https:// URL (flag --mlflow-tracking-uri), got ${JSON.stringify(uri)}`,
        });
      })
      .default("")
      .describe("MLflow tracking server, http(s)://host:port; empty: no MLflow run. Token: MLFLOW_TRACKING_TOKEN"),
    experiment: z.string().default("arclight").describe("MLflow experiment name; created when missing"),
  })
  .superRefine((mlflow, ctx) => {
    if (mlflow.tracking_uri !== "" || mlflow.experiment === "arclight") return;
    ctx.addIssue({
      code: "custom",
      path: ["tracking_uri"],
      message:
        `not set, but experiment is (${JSON.stringify(mlflow.experiment)}): MLflow logs nothing without a ` +
        "tracking server; set it (flag --mlflow-tracking-uri)",
    });
  });

/** TensorBoard: event files written by the trainer. */
export const TensorboardConfigSchema = z.strictObject({
  dir: z.string().default("").describe("folder of TensorBoard event files (one subfolder per run name); empty: none"),
});

/** A strict object schema defaulting to parsing `{}` with it, so a missing section gets every inner default. */
function section<S extends z.ZodObject>(schema: S, description: string) {
  // `as never`: TypeScript cannot see that a generic object schema's output is never undefined.
  return schema.default(() => schema.parse({}) as never).describe(description);
}

/**
 * Every tracker; each is off until its main key (project, tracking_uri, dir) is set, and another of its keys set
 * without the main one is refused, naming the missing key.
 */
export const TrackingConfigSchema = section(
  z.strictObject({
    wandb: section(WandbConfigSchema, "Weights & Biases run"),
    mlflow: section(MlflowConfigSchema, "MLflow run"),
    tensorboard: section(TensorboardConfigSchema, "TensorBoard event files"),
  }),
  "experiment trackers that get every step's metrics, the config, validation tables and the final checkpoint path",
);

/** Tracking settings, defaults applied. */
export type TrackingConfig = z.infer<typeof TrackingConfigSchema>;
