import { describe, expect, it } from "vitest";
import type { Rollout } from "../protocol/index.js";
import type { RolloutRecord } from "./batch.js";
import { parseSftConfig } from "./sft-config.js";
import { bestOfN, matchesRollout } from "./sft-select.js";

const rollout = (id: string, dataId: string, metadata: Record<string, unknown> = {}): Rollout =>
  ({ rollout_id: id, input: { data_id: dataId }, metadata, is_train: true }) as unknown as Rollout;
const select = (rules: Record<string, unknown>) =>
  parseSftConfig({ source: { gateway_url: "http://127.0.0.1:1" }, select: rules }).select;

describe("matchesRollout", () => {
  it("keeps rollouts whose id starts with id_prefix", () => {
    expect(matchesRollout(rollout("runA-g1-0", "d1"), select({ id_prefix: "runA-" }))).toBe(true);
    expect(matchesRollout(rollout("runB-g1-0", "d1"), select({ id_prefix: "runA-" }))).toBe(false);
  });

  it("keeps rollouts whose metadata holds every pair of the tag", () => {
    const tagged = rollout("r", "d", { tag: "gold", batch_idx: 3 });
    expect(matchesRollout(tagged, select({ metadata: { tag: "gold" } }))).toBe(true);
    expect(matchesRollout(tagged, select({ metadata: { tag: "gold", batch_idx: 4 } }))).toBe(false);
    expect(matchesRollout(rollout("r", "d"), select({ metadata: { tag: "gold" } }))).toBe(false);
  });

  it("keeps rollouts whose data id is listed", () => {
    expect(matchesRollout(rollout("r", "d2"), select({ data_ids: ["d1", "d2"] }))).toBe(true);
    expect(matchesRollout(rollout("r", "d3"), select({ data_ids: ["d1", "d2"] }))).toBe(false);
  });
});

describe("bestOfN", () => {
  it("keeps the highest-reward rollout of each data id, the first one on a tie, in record order", () => {
    const records: RolloutRecord[] = ["a", "b", "a", "b", "c", "c"].map((dataId, i) => ({
      rolloutId: `r${i}`,
      dataId,
      events: [],
    }));
    // a: r0 = 0.2, r2 = 0.9 -> r2; b: r1 = 1, r3 = 1 (tie) -> r1; c: r4 = 0, r5 = -1 -> r4
    expect(bestOfN(records, [0.2, 1, 0.9, 1, 0, -1])).toEqual([1, 2, 4]);
  });
});

describe("parseSftConfig", () => {
  it("needs exactly one source", () => {
    expect(() => parseSftConfig({})).toThrow("set exactly one of gateway_url and db_path");
    expect(() => parseSftConfig({ source: { gateway_url: "http://x", db_path: "g.db" } })).toThrow("exactly one");
  });

  it("refuses an unknown key, naming it", () => {
    expect(() => parseSftConfig({ source: { db_path: "g.db" }, sft: { stepz: 3 } })).toThrow(
      "sft: unknown field(s): stepz",
    );
  });
});
