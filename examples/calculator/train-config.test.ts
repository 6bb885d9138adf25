import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { MODEL_PRESETS } from "../../src/engine/embedded/config.js";
import { parseTrainerConfig } from "../../src/trainer/config.js";

const here = dirname(fileURLToPath(import.meta.url));

describe("examples/calculator/train.yaml, the starter config README points to", () => {
  it("is a valid trainer config whose data files exist and whose row lengths fit the tiny engine's context", () => {
    const config = parseTrainerConfig(parseYaml(readFileSync(join(here, "train.yaml"), "utf8")));
    expect(existsSync(join(here, config.data.train_path))).toBe(true);
    expect(existsSync(join(here, config.data.val_path!))).toBe(true);
    const longest = config.aggregator.max_prompt_length + config.aggregator.max_response_length;
    expect(longest).toBeLessThanOrEqual(MODEL_PRESETS.tiny.context);
    // The agent script is named relative to this file, as its data paths are (docs/configuration.md).
    expect(config.controller.command.at(-1)).toBe("agent.ts");
    expect(existsSync(join(here, "agent.ts"))).toBe(true);
  });
});
