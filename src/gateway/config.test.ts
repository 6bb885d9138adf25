import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { GatewayConfigSchema, gatewayConfig, proxyOptionsOf } from "./config.js";

describe("GatewayConfigSchema", () => {
  it("rejects unknown keys and out-of-range values", () => {
    expect(() => gatewayConfig({ prot: 1 } as never)).toThrow();
    expect(() => gatewayConfig({ port: 70000 })).toThrow();
    expect(() => gatewayConfig({ store: "mysql://x" })).toThrow();
    expect(() => gatewayConfig({ store: "postgres:db" })).toThrow();
    expect(gatewayConfig({ store: "postgresql://u@h:5432/db" }).store).toBe("postgresql://u@h:5432/db");
    expect(() => gatewayConfig({ body_limit_bytes: 0 })).toThrow();
    // A name no registration can take (POST /api/models allows 1,000 characters).
    expect(() => gatewayConfig({ model_name: "m".repeat(1001) })).toThrow(/model_name/);
    expect(gatewayConfig({ model_name: "m".repeat(1000) }).model_name).toHaveLength(1000);
    // HTTP trims header values: a key with whitespace at either end could never be presented.
    for (const key of ["sekret\n", " ", " sekret"]) expect(() => gatewayConfig({ key })).toThrow(/key.*whitespace/s);
    expect(() => gatewayConfig({ dashboard_key: "view\n" })).toThrow(/whitespace/);
    expect(gatewayConfig({ key: "a b" }).key).toBe("a b");
  });

  it("maps onto the proxy's options, seconds to ms", () => {
    const options = proxyOptionsOf(
      gatewayConfig({ model_name: "m", val_temperature: 0.3, include_log_probs: false, upstream_timeout_seconds: 1.5 }),
    );
    expect(options).toMatchObject({
      modelName: "m",
      trainTemperature: 1,
      valTemperature: 0.3,
      includeLogProbs: false,
      upstreamTimeoutMs: 1500,
      bodyLimitBytes: 32 * 1024 * 1024,
    });
  });

  it("is documented in docs/api.md: one table row per key, with its default", () => {
    const readme = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");
    const defaults = gatewayConfig();
    for (const key of GatewayConfigSchema.keyof().options) {
      const row = readme.split("\n").find((line) => line.startsWith(`| \`${key}\` |`));
      expect(row, `docs/api.md row for ${key}`).toBeDefined();
      expect(row).toContain(`\`${JSON.stringify(defaults[key]).replace(/^"(.+)"$/, "$1")}\``);
    }
  });
});
