import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { renderConfigTable } from "./config-table.js";
import { SftConfigSchema } from "./sft-config.js";

const DOC = new URL("../../docs/configuration.md", import.meta.url);
const START = "<!-- sft-config:start -->";
const END = "<!-- sft-config:end -->";

describe("sft config table", () => {
  it("matches the table in docs/configuration.md (regenerate it from renderConfigTable(SftConfigSchema) when this fails)", () => {
    const doc = readFileSync(DOC, "utf8");
    const start = doc.indexOf(START);
    const end = doc.indexOf(END);
    expect(start).toBeGreaterThan(-1);
    expect(end).toBeGreaterThan(start);
    expect(doc.slice(start + START.length, end).trim()).toBe(renderConfigTable(SftConfigSchema));
  });
});
