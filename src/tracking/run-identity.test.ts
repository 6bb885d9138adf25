import { describe, expect, it } from "vitest";
import { TrackingConfigSchema } from "./config.js";
import { identitiesToResume } from "./run-identity.js";

const recorded = {
  wandb: { run_id: "3f9c2a1b", entity: "team", project: "agents" },
  mlflow: { run_id: "r1", tracking_uri: "http://127.0.0.1:5000", experiment: "agents" },
};

describe("which recorded tracker runs a resumed run continues", () => {
  it("continues runs in the configured projects; an empty entity matches the recorded one", () => {
    const tracking = TrackingConfigSchema.parse({
      wandb: { project: "agents" },
      mlflow: { tracking_uri: "http://127.0.0.1:5000", experiment: "agents" },
    });
    expect(identitiesToResume(tracking, recorded)).toEqual({ resume: recorded, notes: [] });
  });

  it("starts new runs for another project, entity or experiment, one line each", () => {
    const tracking = TrackingConfigSchema.parse({
      wandb: { project: "agents", entity: "other-team" },
      mlflow: { tracking_uri: "http://127.0.0.1:5000", experiment: "evals" },
    });
    const { resume, notes } = identitiesToResume(tracking, recorded);
    expect(resume).toEqual({});
    expect(notes).toEqual([
      "W&B run 3f9c2a1b was in team/agents, the config names other-team/agents: starting a new W&B run",
      "MLflow run r1 was in experiment agents at http://127.0.0.1:5000, the config names evals at " +
        "http://127.0.0.1:5000: starting a new MLflow run",
    ]);
  });

  it("says nothing about a tool the config no longer uses", () => {
    const tracking = TrackingConfigSchema.parse({});
    expect(identitiesToResume(tracking, recorded)).toEqual({ resume: {}, notes: [] });
  });
});
