import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { TrainerConfigSchema } from "./config.js";
import { listConfigKeys, renderConfigTable } from "./config-table.js";

const README = new URL("../../docs/configuration.md", import.meta.url);
const START = "<!-- trainer-config:start -->";
const END = "<!-- trainer-config:end -->";

describe("config table", () => {
  it("lists nested keys with their default and description", () => {
    const schema = z.strictObject({
      a: z.number().default(1).describe("A (s)"),
      b: z.strictObject({ c: z.string().nullable().default(null).describe("C | pipe") }).default({ c: null }),
    });
    expect(listConfigKeys(schema)).toEqual([
      { key: "a", defaultJson: "1", description: "A (s)" },
      { key: "b.c", defaultJson: "null", description: "C | pipe" },
    ]);
    expect(renderConfigTable(schema)).toBe(
      [
        "| Key | Default | Description |",
        "|---|---|---|",
        "| `a` | `1` | A (s) |",
        "| `b.c` | `null` | C \\| pipe |",
      ].join("\n"),
    );
  });

  it("refuses a leaf without a default or a description", () => {
    expect(() => listConfigKeys(z.strictObject({ a: z.number().describe("A") }))).toThrow(/a has no \.default\(\)/);
    expect(() => listConfigKeys(z.strictObject({ a: z.number().default(1) }))).toThrow(/a has no \.describe\(\)/);
  });

  it("documents every leaf of the trainer config", () => {
    const keys = listConfigKeys(TrainerConfigSchema).map((doc) => doc.key);
    expect(keys).toContain("async.async_train_batch_size");
    expect(keys).toContain("loss.tis_cap");
    expect(keys).toContain("failed_rollouts");
    expect(keys).toContain("engine.lora.rank");
    expect(keys).toContain("engine.train_threads");
    expect(keys).toContain("controller.reuse_processes");
    expect(keys).toContain("engine.decode_threads");
    expect(keys).toContain("mismatch.mask_level");
    expect(keys).toContain("tracking.tensorboard.dir");
    expect(keys).toContain("pass_threshold");
    expect(keys).toContain("judge.mode");
    expect(keys).toContain("engine.vllm.launch.max_restarts");
    expect(keys).toContain("proxy.reasoning_parser");
    expect(keys).toHaveLength(125);
  });

  it("matches the table in docs/configuration.md (regenerate it from renderConfigTable(TrainerConfigSchema) when this fails)", () => {
    const readme = readFileSync(README, "utf8");
    const start = readme.indexOf(START);
    const end = readme.indexOf(END);
    expect(start).toBeGreaterThan(-1);
    expect(end).toBeGreaterThan(start);
    expect(readme.slice(start + START.length, end).trim()).toBe(renderConfigTable(TrainerConfigSchema));
  });
});
