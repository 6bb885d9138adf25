import { describe, expect, it } from "vitest";
import { MAX_ROLLOUT_ID_LENGTH, RolloutIdSchema } from "../protocol/index.js";
import { parseTrainerConfig } from "./config.js";
import { longestTrainingRolloutIds, maxRunNameLength } from "./run-name-room.js";

const items = (count: number) => Array.from({ length: count }, (_, index) => ({ index, input: {} }));

describe("maxRunNameLength", () => {
  it("is the rollout id limit less the longest suffix the ids append to the name", () => {
    // Suffixes "-e0-d3-1" (8) and "-v12-d45-0" (10): the longer one sets the room.
    expect(maxRunNameLength("run", ["run-e0-d3-1", "run-v12-d45-0"])).toBe(MAX_ROLLOUT_ID_LENGTH - 10);
    expect(maxRunNameLength("run", [])).toBe(MAX_ROLLOUT_ID_LENGTH);
  });

  it("refuses an id that does not start with the name (its suffix would be meaningless)", () => {
    expect(() => maxRunNameLength("run", ["other-e0-d3-1"])).toThrow(RangeError);
  });
});

describe("longestTrainingRolloutIds", () => {
  it("names the last epoch, the largest input index, the last rollout of a group and the last validated step", () => {
    // 5 steps x 2 groups = 10 groups over 4 inputs: epochs 0, 0, 0, 0, 1, 1, 1, 1, 2, 2 -> last epoch 2.
    // Validation every 2 steps of 5: the last one follows step 4.
    const config = parseTrainerConfig({ name: "run", n: 3, train_batch_size: 2, total_steps: 5, val_interval: 2 });
    expect(longestTrainingRolloutIds(config, items(4), items(12))).toEqual(["run-e2-d3-2", "run-v4-d11-0"]);
  });

  it("leaves validation out without validation inputs or with val_interval 0", () => {
    const config = parseTrainerConfig({ name: "run", n: 1, train_batch_size: 4, total_steps: 1, val_interval: 0 });
    expect(longestTrainingRolloutIds(config, items(4), items(3))).toEqual(["run-e0-d3-0"]);
    const validating = parseTrainerConfig({ name: "run", n: 1, train_batch_size: 4, total_steps: 1, val_interval: 1 });
    expect(longestTrainingRolloutIds(validating, items(4), null)).toEqual(["run-e0-d3-0"]);
  });

  it("a name of the length it leaves makes ids the gateway takes; one character more does not", () => {
    const config = (name: string) => parseTrainerConfig({ name, n: 8, total_steps: 300, val_interval: 10 });
    const max = maxRunNameLength("run", longestTrainingRolloutIds(config("run"), items(2000), items(200)));
    const fits = longestTrainingRolloutIds(config("x".repeat(max)), items(2000), items(200));
    expect(fits.every((id) => RolloutIdSchema.safeParse(id).success)).toBe(true);
    const over = longestTrainingRolloutIds(config("x".repeat(max + 1)), items(2000), items(200));
    expect(over.some((id) => !RolloutIdSchema.safeParse(id).success)).toBe(true);
  });
});
