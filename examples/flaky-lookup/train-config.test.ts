import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { MODEL_PRESETS } from "../../src/engine/embedded/config.js";
import { parseTrainerConfig } from "../../src/trainer/config.js";

const here = dirname(fileURLToPath(import.meta.url));

describe("examples/flaky-lookup/train.yaml", () => {
  it("is a valid trainer config with transition rows, existing data files and rows that fit the tiny context", () => {
    const config = parseTrainerConfig(parseYaml(readFileSync(join(here, "train.yaml"), "utf8")));
    expect(existsSync(join(here, config.data.train_path))).toBe(true);
    expect(existsSync(join(here, config.data.val_path!))).toBe(true);
    expect(config.aggregator.level).toBe("transition");
    const longest = config.aggregator.max_prompt_length + config.aggregator.max_response_length;
    expect(longest).toBeLessThanOrEqual(MODEL_PRESETS.tiny.context);
    expect(config.controller.command).toContain("examples/flaky-lookup/agent.ts");
    expect(config.controller.env_map).toEqual({ DIGITS: "input.digits" });
  });
});
