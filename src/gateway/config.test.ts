import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { GatewayConfigSchema, gatewayConfig } from "./config.js";

describe("GatewayConfigSchema", () => {
  it("rejects unknown keys and out-of-range values", () => {
    expect(() => gatewayConfig({ prot: 1 } as never)).toThrow();
    expect(() => gatewayConfig({ port: 70000 })).toThrow();
    expect(() => gatewayConfig({ store: "postgres://x" })).toThrow();
    expect(() => gatewayConfig({ body_limit_bytes: 0 })).toThrow();
  });

  it("is documented in README: one table row per key, with its default", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const defaults = gatewayConfig();
    for (const key of GatewayConfigSchema.keyof().options) {
      const row = readme.split("\n").find((line) => line.startsWith(`| \`${key}\` |`));
      expect(row, `README row for ${key}`).toBeDefined();
      expect(row).toContain(`\`${JSON.stringify(defaults[key]).replace(/^"(.+)"$/, "$1")}\``);
    }
  });
});
