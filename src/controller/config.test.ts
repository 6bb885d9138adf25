import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ControllerConfigSchema } from "./config.js";

describe("ControllerConfigSchema", () => {
  it("rejects unknown keys and out-of-range values", () => {
    expect(() => ControllerConfigSchema.parse({ pool: 3 })).toThrow();
    expect(() => ControllerConfigSchema.parse({ pool_size: 0 })).toThrow();
    expect(() => ControllerConfigSchema.parse({ mode: "docker" })).toThrow();
    expect(() => ControllerConfigSchema.parse({ local: { command: [] } })).toThrow();
    expect(() => ControllerConfigSchema.parse({ key_secret_name: "Not_DNS" })).toThrow();
    expect(() => ControllerConfigSchema.parse({ k8s_env_map: { "1BAD": "input.x" } })).toThrow();
  });

  it("is documented in docs/controller.md: one table row per key, with its flag and default", () => {
    const section = readFileSync(new URL("../../docs/controller.md", import.meta.url), "utf8");
    const defaults = ControllerConfigSchema.parse({}) as Record<string, unknown>;
    for (const key of ControllerConfigSchema.keyof().options) {
      const row = section.split("\n").find((line) => line.startsWith(`| \`${key}\` |`));
      expect(row, `docs/controller.md row for ${key}`).toBeDefined();
      const shown =
        defaults[key] === undefined ? "—" : `\`${JSON.stringify(defaults[key]).replace(/^"(.+)"$/, "$1")}\``;
      expect(row).toContain(`| ${shown} |`);
      expect(row).toContain(`| \`--${key.replaceAll("_", "-")}\``);
    }
  });
});
