import { describe, expect, it } from "vitest";
import { parseTrainerConfig } from "./config.js";
import { groupCreates, planGroup } from "./rollout-groups.js";

describe("rollout groups", () => {
  const fields = { dataIndex: 3, input: { q: "1+1" }, isTrain: true, batchIdx: 5, launchVersion: 2 };

  it("pre-assigns ids and shares one data_id per group, with batch metadata and config.local", () => {
    const config = parseTrainerConfig({
      rollout_timeout_seconds: 30,
      controller: { command: ["node", "agent.mjs"], env_map: { Q: "input.q" } },
    });
    const creates = groupCreates(planGroup("run-e0-d3", fields, 3), config);
    expect(creates.map((c) => c.rollout_id)).toEqual(["run-e0-d3-0", "run-e0-d3-1", "run-e0-d3-2"]);
    for (const [k, create] of creates.entries()) {
      expect(create.input).toEqual({ q: "1+1", data_id: "run-e0-d3" });
      expect(create.is_train).toBe(true);
      expect(create.metadata).toMatchObject({ batch_idx: 5, sample_idx_in_batch: k, group_id: "run-e0-d3" });
      expect(create.config).toEqual({
        timeout_seconds: 30,
        max_attempts: 1,
        local: { command: ["node", "agent.mjs"], env_map: { Q: "input.q" } },
      });
    }
  });

  it("keeps an input's own data_id and leaves config.local to the controller when none is configured", () => {
    const [create] = groupCreates(planGroup("g", { ...fields, input: { data_id: "mine" } }, 1), parseTrainerConfig({}));
    expect(create?.input).toEqual({ data_id: "mine" });
    expect(create?.config).not.toHaveProperty("local");
  });
});
