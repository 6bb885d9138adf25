import { describe, expect, it } from "vitest";
import { TrackingConfigSchema } from "../tracking/config.js";
import { parseTrainerConfig } from "../trainer/config.js";
import { applyTrackingFlags } from "./tracking-flags.js";

describe("tracking flags and config", () => {
  it("every tracker is off by default", () => {
    expect(parseTrainerConfig({}).tracking).toEqual({
      wandb: { project: "", entity: "", mode: "online" },
      mlflow: { tracking_uri: "", experiment: "arclight" },
      tensorboard: { dir: "" },
    });
  });

  it("flags set their keys as text over the YAML's, keeping the YAML's other keys", () => {
    const raw = { tracking: { mlflow: { experiment: "from-yaml" }, wandb: { entity: "team" } } };
    const out = applyTrackingFlags(raw, {
      wandbProject: "123",
      tensorboardDir: "tb",
      mlflowTrackingUri: "http://h:5000",
    });
    expect(TrackingConfigSchema.parse(out.tracking)).toEqual({
      wandb: { project: "123", entity: "team", mode: "online" },
      mlflow: { tracking_uri: "http://h:5000", experiment: "from-yaml" },
      tensorboard: { dir: "tb" },
    });
    expect(raw).toEqual({ tracking: { mlflow: { experiment: "from-yaml" }, wandb: { entity: "team" } } });
  });

  it("refuses a tracker's other key set without its main one, naming the missing key and its flag", () => {
    expect(() => TrackingConfigSchema.parse({ wandb: { entity: "team" } })).toThrow(
      /project[\s\S]*not set, but entity is[\s\S]*--wandb-project/,
    );
    expect(() => TrackingConfigSchema.parse({ wandb: { mode: "offline" } })).toThrow(/not set, but mode: offline is/);
    expect(() => TrackingConfigSchema.parse({ mlflow: { experiment: "exp" } })).toThrow(
      /tracking_uri[\s\S]*--mlflow-tracking-uri/,
    );
    expect(TrackingConfigSchema.parse({ wandb: { mode: "disabled", entity: "team" } }).wandb.project).toBe("");
  });

  it("refuses an unknown tracking key or W&B mode, naming them; takes W&B's offline mode by flag", () => {
    expect(() => parseTrainerConfig({ tracking: { wandb: { projekt: "x" } } })).toThrow(/projekt/);
    expect(() => parseTrainerConfig({ tracking: { wandb: { mode: "later" } } })).toThrow(/mode/);
    const out = applyTrackingFlags({}, { wandbProject: "p", wandbMode: "offline" });
    expect(TrackingConfigSchema.parse(out.tracking).wandb).toEqual({ project: "p", entity: "", mode: "offline" });
  });

  it("refuses an MLflow tracking URI that is not http(s), naming the key and the flag", () => {
    for (const uri of ["ftp://x", "notaurl", "file:///tmp/mlruns"]) {
      expect(() => parseTrainerConfig({ tracking: { mlflow: { tracking_uri: uri } } })).toThrow(
        /tracking\.mlflow\.tracking_uri.*--mlflow-tracking-uri/s,
      );
    }
    const ok = parseTrainerConfig({ tracking: { mlflow: { tracking_uri: "https://mlflow.example:5000/base" } } });
    expect(ok.tracking.mlflow.tracking_uri).toBe("https://mlflow.example:5000/base");
  });
});
