import { afterEach, describe, expect, it } from "vitest";
import { FakeWandb } from "./testing/fake-wandb.js";
import { WandbTracker } from "./wandb.js";

const servers: FakeWandb[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function server(): Promise<FakeWandb> {
  const fake = await FakeWandb.start("secret-key");
  servers.push(fake);
  return fake;
}

describe("W&B tracker (HTTP API)", () => {
  it("creates the run with its config, streams history rows, a table, the summary and the exit code", async () => {
    const wandb = await server();
    const tracker = new WandbTracker(wandb.url, "secret-key", "agents", "team", "run-a");
    await tracker.start({ name: "run-a", loss: { clip_low: 0.2 } });
    await tracker.logMetrics(1, { "reward/mean": 0.25 });
    await tracker.logMetrics(2, { "reward/mean": 0.75 });
    await tracker.logTable("validation", 2, { columns: ["input", "reward"], rows: [["2+2", 1]] });
    await tracker.logSummary("checkpoint_path", "/runs/run-a/checkpoints/step-2");
    await tracker.finish("finished");

    const run = wandb.runs.get(`team/agents/${tracker.runId}`)!;
    expect(run.displayName).toBe("run-a");
    expect(run.config).toEqual({
      name: { value: "run-a", desc: null },
      loss: { value: { clip_low: 0.2 }, desc: null },
    });
    // One row per step: step 2's metrics and table are one row.
    expect(run.history.map((row) => [row._step, row["reward/mean"]])).toEqual([
      [1, 0.25],
      [2, 0.75],
    ]);
    expect(run.history[1]!.validation).toEqual({ _type: "table", columns: ["input", "reward"], data: [["2+2", 1]] });
    expect(run.summary).toMatchObject({ "reward/mean": 0.75, checkpoint_path: "/runs/run-a/checkpoints/step-2" });
    expect(run.exitcode).toBe(0);
  });

  it("uses the entity W&B answers when none is configured, and exit code 1 for a failed run", async () => {
    const wandb = await server();
    const tracker = new WandbTracker(wandb.url, "secret-key", "agents", "", "run-b");
    await tracker.start({});
    await tracker.finish("failed");
    expect(wandb.runs.get(`${wandb.defaultEntity}/agents/${tracker.runId}`)!.exitcode).toBe(1);
  });

  it("continues a resumed run: same id, history after the stored lines, summary and runtime kept", async () => {
    const wandb = await server();
    let nowMs = 1_000_000;
    const clock = () => nowMs;
    const first = new WandbTracker(wandb.url, "secret-key", "agents", "", "run-r", clock);
    await first.start({ steps: 3 });
    await first.logMetrics(1, { "reward/mean": 0.1 });
    await first.logMetrics(2, { "reward/mean": 0.2 });
    await first.logMetrics(3, { "reward/mean": 0.3 });
    await first.logSummary("checkpoint_path", "/runs/run-r/checkpoints/step-2");
    nowMs += 10_000;
    await first.finish("failed");
    const identity = first.identity().wandb!;
    expect(identity).toEqual({ run_id: first.runId, entity: wandb.defaultEntity, project: "agents" });

    nowMs += 60_000;
    const second = new WandbTracker(wandb.url, "secret-key", "agents", "", "run-r", clock, identity);
    expect(second.runId).toBe(first.runId);
    await second.start({ steps: 5 });
    // Step 3 is stored already (the checkpoint was step 2): W&B's client drops steps that do not increase.
    await second.logMetrics(3, { "reward/mean": 0.33 });
    nowMs += 5_000;
    await second.logMetrics(4, { "reward/mean": 0.4 });
    await second.finish("finished");

    expect(wandb.runs.size).toBe(1);
    const run = wandb.runs.get(`${wandb.defaultEntity}/agents/${first.runId}`)!;
    expect(run.history.map((row) => [row._step, row["reward/mean"]])).toEqual([
      [1, 0.1],
      [2, 0.2],
      [3, 0.3],
      [4, 0.4],
    ]);
    // _runtime goes on from the stored run's (10 s), not from zero.
    expect(run.history[3]!._runtime).toBe(15);
    expect(run.summary).toMatchObject({ "reward/mean": 0.4, checkpoint_path: "/runs/run-r/checkpoints/step-2" });
    expect(run.config).toEqual({ steps: { value: 5, desc: null } });
    expect(run.exitcode).toBe(0);
  });

  it("resumes a run W&B does not have as a new run with the same id", async () => {
    const wandb = await server();
    const identity = { run_id: "abc12345", entity: "team", project: "agents" };
    const tracker = new WandbTracker(wandb.url, "secret-key", "agents", "", "run-s", Date.now, identity);
    await tracker.start({});
    await tracker.logMetrics(0, { x: 1 });
    await tracker.finish("finished");
    expect(wandb.runs.get("team/agents/abc12345")!.history.map((row) => row._step)).toEqual([0]);
  });

  it("fails naming the status when the key is refused", async () => {
    const wandb = await server();
    await expect(new WandbTracker(wandb.url, "wrong", "agents", "", "run-c").start({})).rejects.toThrow(/answered 401/);
  });
});
