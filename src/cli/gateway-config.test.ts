import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_BODY_LIMIT_BYTES } from "../gateway/config.js";
import { CliError } from "./cli-error.js";
import { loadGatewayConfig } from "./gateway-config.js";
import { warnKeyOnArgv } from "./key-source.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "arclight-gw-config-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function yamlFile(text: string): string {
  const path = join(dir, "gateway.yaml");
  writeFileSync(path, text);
  return path;
}

describe("loadGatewayConfig", () => {
  it("applies the documented defaults", () => {
    expect(loadGatewayConfig({}, {})).toEqual({
      host: "127.0.0.1",
      port: 8080,
      key: "",
      store: "sqlite:./.arclight/gateway.db",
      store_lock_wait_seconds: 10,
      body_limit_bytes: DEFAULT_BODY_LIMIT_BYTES,
      model_name: "",
      train_temperature: 1,
      val_temperature: 0.7,
      include_log_probs: true,
      upstream_timeout_seconds: 600,
      upstream_key: "",
      upstream_total_timeout_seconds: 600,
      upstream_retry_after_max_seconds: 10,
      upstream_retry_budget_ratio: 0.2,
      upstream_max_response_bytes: 32 * 1024 * 1024,
      drain_timeout_seconds: 120,
      agent_models: {},
      agent_routes: {},
      headers_timeout_seconds: 30,
      request_timeout_seconds: 300,
      shutdown_grace_seconds: 30,
      triplet_dedupe: "prompt",
      log_level: "info",
      dashboard: true,
      dashboard_key: "",
      runs_dir: "",
    });
    expect(DEFAULT_BODY_LIMIT_BYTES).toBe(32 * 1024 * 1024);
  });

  it("reads the upstream key from ARCLIGHT_UPSTREAM_KEY", () => {
    expect(loadGatewayConfig({}, { ARCLIGHT_UPSTREAM_KEY: "sk-up" }).upstream_key).toBe("sk-up");
  });

  it("layers YAML file < env < flags", () => {
    const config = yamlFile("port: 9000\nkey: from-file\nmodel_name: file-model\nval_temperature: 0.2\n");
    expect(loadGatewayConfig({ config }, {})).toMatchObject({ port: 9000, key: "from-file", model_name: "file-model" });
    expect(loadGatewayConfig({ config }, { AGL_KEY: "from-agl" }).key).toBe("from-agl");
    expect(loadGatewayConfig({ config }, { AGL_KEY: "from-agl", ARCLIGHT_KEY: "from-arclight" }).key).toBe(
      "from-arclight",
    );
    const flagged = loadGatewayConfig(
      { config, key: "from-flag", port: "0", includeLogProbs: "false", valTemperature: "0.5", store: "memory" },
      { ARCLIGHT_KEY: "from-arclight" },
    );
    expect(flagged).toMatchObject({
      key: "from-flag",
      port: 0,
      include_log_probs: false,
      val_temperature: 0.5,
      store: "memory",
      model_name: "file-model",
    });
    expect(Object.isFrozen(flagged)).toBe(true);
  });

  it("takes the store from YAML < ARCLIGHT_STORE < --store, and names the env var when it is bad", () => {
    const config = yamlFile("store: sqlite:/tmp/from-file.db\n");
    expect(loadGatewayConfig({ config }, {}).store).toBe("sqlite:/tmp/from-file.db");
    const url = "postgres://arclight@db:5432/arclight";
    expect(loadGatewayConfig({ config }, { ARCLIGHT_STORE: url }).store).toBe(url);
    expect(loadGatewayConfig({ config, store: "memory" }, { ARCLIGHT_STORE: url }).store).toBe("memory");
    expect(() => loadGatewayConfig({}, { ARCLIGHT_STORE: "postgres:db" })).toThrow("env ARCLIGHT_STORE:");
  });

  it.each([
    [{ port: "abc" }, "--port abc: expected an integer"],
    [{ port: "1.5" }, "--port 1.5: expected an integer"],
    [{ port: "70000" }, "--port"],
    [{ includeLogProbs: "yes" }, "--include-log-probs yes: expected true or false"],
    [{ trainTemperature: "hot" }, "--train-temperature hot: expected a number"],
    [{ bodyLimitBytes: "0" }, "--body-limit-bytes"],
    [{ store: "postgres:x" }, "--store"],
    [{ logLevel: "loud" }, "--log-level"],
  ])("rejects the bad flag %o with a message naming it", (flags, message) => {
    expect(() => loadGatewayConfig(flags, {})).toThrow(CliError);
    expect(() => loadGatewayConfig(flags, {})).toThrow(message);
  });

  it("names the file and key for a bad or unknown config key", () => {
    const bad = yamlFile("port: eighty\n");
    expect(() => loadGatewayConfig({ config: bad }, {})).toThrow(`--config ${bad}: key port:`);
    const unknown = yamlFile("prot: 80\n");
    expect(() => loadGatewayConfig({ config: unknown }, {})).toThrow(/unknown key\(s\) prot; accepted: host, port/);
  });

  it("names the file when it cannot be read, is not YAML or is not a mapping", () => {
    const missing = join(dir, "missing.yaml");
    expect(() => loadGatewayConfig({ config: missing }, {})).toThrow(
      `--config ${missing}: cannot read the file (ENOENT)`,
    );
    expect(() => loadGatewayConfig({ config: yamlFile("port: [1,\n") }, {})).toThrow(/invalid YAML/);
    expect(() => loadGatewayConfig({ config: yamlFile("- 1\n- 2\n") }, {})).toThrow(/expected a mapping/);
  });

  it("accepts an empty config file", () => {
    expect(loadGatewayConfig({ config: yamlFile("") }, {}).port).toBe(8080);
  });

  it("never puts the key in an error message", () => {
    const config = yamlFile("key: 12345\n");
    expect(() => loadGatewayConfig({ config }, {})).toThrow(/key key: Invalid input: expected string/);
    let message = "";
    try {
      loadGatewayConfig({ config }, {});
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).not.toContain("12345");
  });

  it("refuses an empty ARCLIGHT_KEY beside ARCLIGHT_KEY_FILE (auth would be off), and --key beside --key-file", () => {
    const file = yamlFile("");
    expect(() => loadGatewayConfig({}, { ARCLIGHT_KEY: "", ARCLIGHT_KEY_FILE: file })).toThrow(
      "env ARCLIGHT_KEY is empty and ARCLIGHT_KEY_FILE is set: unset ARCLIGHT_KEY to use the file",
    );
    expect(loadGatewayConfig({}, { ARCLIGHT_KEY: "" }).key).toBe("");
    expect(() => warnKeyOnArgv("gateway", { key: "k", keyFile: file })).toThrow(/--key and --key-file both given/);
  });
});
