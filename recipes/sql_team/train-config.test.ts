import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { MODEL_PRESETS } from "../../src/engine/embedded/config.js";
import { parseTrainerConfig } from "../../src/trainer/config.js";
import { checkerPrompt, rewriterPrompt, writerPrompt } from "./prompts.js";
import { readSplit, readTables, schemaText } from "./spider-data.js";

const here = dirname(fileURLToPath(import.meta.url));
const load = (file: string) => parseTrainerConfig(parseYaml(readFileSync(join(here, file), "utf8")));

describe("recipes/sql_team train configs", () => {
  it.each(["train.cpu.yaml", "train.gpu.yaml"])(
    "%s trains writer and rewriter, freezes the checker, finds its files",
    (file) => {
      const config = load(file);
      expect(config.agents.train).toEqual(["writer", "rewriter"]);
      expect(config.agents.frozen).toEqual(["checker"]);
      expect(config.aggregator.level).toBe("transition");
      expect(existsSync(join(here, config.data.train_path))).toBe(true);
      expect(existsSync(join(here, config.data.val_path!))).toBe(true);
      const [tables] = config.controller.command.slice(-1);
      expect(existsSync(join(here, tables!))).toBe(true);
      expect(config.controller.env_map).toEqual({
        SQL_DB_ID: "input.db_id",
        SQL_QUESTION: "input.question",
        SQL_GOLD: "input.query",
      });
    },
  );

  it("train.cpu.yaml's rows fit the embedded agent preset, and its longest rewriter prompt fits max_prompt_length", () => {
    const config = load("train.cpu.yaml");
    expect(config.aggregator.max_prompt_length + config.aggregator.max_response_length).toBeLessThanOrEqual(
      MODEL_PRESETS.agent.context,
    );
    // Bytes of the embedded engine's byte tokenizer: the rewriter's prompt with the longest question, its gold query
    // as the query, a full result (600 characters) and a 48-token review; plus the chat template's few bytes.
    const tables = readTables(join(here, "data/tables.json"));
    const longest = Math.max(
      ...["train_spider.json", "dev.json"].flatMap((split) =>
        readSplit(join(here, "data"), split).map((e) => {
          const schema = schemaText(tables.get(e.db_id)!);
          const result = "x".repeat(601);
          return Math.max(
            Buffer.byteLength(writerPrompt(schema, e.question)),
            Buffer.byteLength(checkerPrompt(schema, e.question, e.query, result)),
            Buffer.byteLength(rewriterPrompt(schema, e.question, e.query, result, "r".repeat(48))),
          );
        }),
      ),
    );
    expect(longest + 64).toBeLessThanOrEqual(config.aggregator.max_prompt_length);
  });
});
