import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { renderConfigTable } from "../trainer/config-table.js";
import { ApoConfigSchema, parseApoConfig } from "./config.js";

const DOC = new URL("../../docs/sft-apo.md", import.meta.url);
const START = "<!-- apo-config:start -->";
const END = "<!-- apo-config:end -->";

const minimal = {
  prompt: { env: "SYSTEM_PROMPT", initial: "Be brief." },
  data: { train_path: "train.jsonl", val_path: "val.jsonl" },
  agent: { command: ["node", "agent.js"] },
  policy: { endpoint: "http://127.0.0.1:8000/v1" },
};

describe("apo config", () => {
  it("applies every default to a minimal config", () => {
    const config = parseApoConfig(minimal);
    expect(config.search).toMatchObject({ rounds: 3, beam_width: 2, branch_factor: 2, patience: 1 });
    expect(config.optimiser).toMatchObject({ api_key_env: "OPENAI_API_KEY", timeout_seconds: 120 });
    expect(config.prompt.resource).toBe("prompt");
  });

  it("names each required key that is missing", () => {
    expect(() => parseApoConfig({})).toThrow(
      /data\.train_path: required.*data\.val_path: required.*policy\.endpoint: required.*prompt\.env: set env or file_env.*agent\.command: set command or agent_class/s,
    );
  });

  it("names an unknown key and a bad value", () => {
    expect(() => parseApoConfig({ ...minimal, search: { beam: 2 } })).toThrow(/search.*beam/);
    expect(() => parseApoConfig({ ...minimal, search: { beam_width: 0 } })).toThrow(/search\.beam_width/);
    expect(() => parseApoConfig({ ...minimal, policy: { endpoint: "localhost:8000" } })).toThrow(/policy\.endpoint/);
  });

  it("parses the calculator example, examples/calculator/apo.yaml", () => {
    const text = readFileSync(new URL("../../examples/calculator/apo.yaml", import.meta.url), "utf8");
    const config = parseApoConfig(parseYaml(text));
    expect(config.prompt).toMatchObject({ resource: "prompt", env: "CALC_SYSTEM_PROMPT" });
    expect(config.agent.env_map).toEqual({ QUESTION: "input.question", ANSWER: "input.answer" });
  });

  it("matches the table in docs/sft-apo.md (regenerate it from renderConfigTable(ApoConfigSchema) when this fails)", () => {
    const doc = readFileSync(DOC, "utf8");
    const start = doc.indexOf(START);
    const end = doc.indexOf(END);
    expect(start).toBeGreaterThan(-1);
    expect(end).toBeGreaterThan(start);
    expect(doc.slice(start + START.length, end).trim()).toBe(renderConfigTable(ApoConfigSchema));
  });
});
