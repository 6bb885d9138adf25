import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ControllerConfigSchema } from "../controller/config.js";
import { CliError } from "./cli-error.js";
import { CONTROLLER_FLAGS, loadControllerConfig } from "./controller-config.js";
import { buildProgram } from "./program.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function yamlFile(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), "arclight-cli-"));
  dirs.push(dir);
  const path = join(dir, "controller.yaml");
  writeFileSync(path, text);
  return path;
}

describe("loadControllerConfig", () => {
  it("applies defaults", () => {
    const config = loadControllerConfig({}, {});
    expect(config).toMatchObject({
      gateway_url: "http://127.0.0.1:8080",
      key: "",
      mode: "local",
      pool_size: 8,
      poll_interval_seconds: 1,
      log_tail_bytes: 65_536,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("layers YAML file < env key < flags", () => {
    const file = yamlFile(
      "gateway_url: http://gw:9000\nkey: from-file\npool_size: 2\nlocal:\n  command: [python3, agent.py]\n  env_map: {Q: input.q}\n",
    );
    const config = loadControllerConfig({ config: file, poolSize: "4" }, { AGL_KEY: "from-env" });
    expect(config.gateway_url).toBe("http://gw:9000");
    expect(config.key).toBe("from-env");
    expect(config.pool_size).toBe(4);
    expect(config.local).toEqual({ command: ["python3", "agent.py"], env_map: { Q: "input.q" } });
    expect(loadControllerConfig({ config: file, key: "from-flag" }, { ARCLIGHT_KEY: "x" }).key).toBe("from-flag");
  });

  it("names the bad flag, file key or unknown key", () => {
    expect(() => loadControllerConfig({ poolSize: "0" }, {})).toThrow(
      new CliError("--pool-size: Too small: expected number to be >=1"),
    );
    expect(() => loadControllerConfig({ pollInterval: "fast" }, {})).toThrow("--poll-interval fast: expected a number");
    expect(() => loadControllerConfig({ mode: "docker" }, {})).toThrow(/^--mode: /);
    expect(() => loadControllerConfig({ agentUrl: "gateway:8080" }, {})).toThrow(/^--agent-url: /);
    expect(() => loadControllerConfig({ ttlAfterFinished: "-1" }, {})).toThrow(/^--ttl-after-finished: /);
    expect(() => loadControllerConfig({ gatewayUrl: "not a url" }, {})).toThrow(/^--gateway-url: /);
    const unknown = yamlFile("pool: 3\n");
    expect(() => loadControllerConfig({ config: unknown }, {})).toThrow(
      /unknown key\(s\) pool; accepted: gateway_url, /,
    );
    const nested = yamlFile("local:\n  comand: [x]\n");
    expect(() => loadControllerConfig({ config: nested }, {})).toThrow(/key local: unknown key\(s\) comand/);
    expect(() => loadControllerConfig({ config: join(tmpdir(), "does-not-exist.yaml") }, {})).toThrow(
      /cannot read the file \(ENOENT\)/,
    );
  });

  it("reads the k8s mode's flags as docs/kubernetes.md spells them", () => {
    const config = loadControllerConfig(
      {
        mode: "k8s",
        namespace: "agents",
        agentUrl: "http://arclight-gateway:8080",
        maxJobsPerMinute: "30",
        ttlAfterFinished: "60",
        pollInterval: "2",
        kubeconfig: "/tmp/kc",
      },
      {},
    );
    expect(config).toMatchObject({
      mode: "k8s",
      namespace: "agents",
      agent_url: "http://arclight-gateway:8080",
      max_jobs_per_minute: 30,
      ttl_after_finished_seconds: 60,
      poll_interval_seconds: 2,
      kubeconfig: "/tmp/kc",
    });
  });

  it("reads every config key from its --kebab-case flag; --poll-interval and --spawn-rate stay as aliases", () => {
    const config = loadControllerConfig(
      {
        pollIntervalSeconds: "2",
        spawnRatePerSecond: "5",
        spawnBurst: "3",
        listPageSize: "10",
        local: "{command: [python3, agent.py], env_map: {Q: input.q}}",
      },
      {},
    );
    expect(config).toMatchObject({
      poll_interval_seconds: 2,
      spawn_rate_per_second: 5,
      spawn_burst: 3,
      list_page_size: 10,
      local: { command: ["python3", "agent.py"], env_map: { Q: "input.q" } },
    });
    const aliased = loadControllerConfig({ pollInterval: "0.5", spawnRate: "7" }, {});
    expect([aliased.poll_interval_seconds, aliased.spawn_rate_per_second]).toEqual([0.5, 7]);
    // The long flag wins over its alias.
    expect(loadControllerConfig({ pollInterval: "0.5", pollIntervalSeconds: "3" }, {}).poll_interval_seconds).toBe(3);
    expect(() => loadControllerConfig({ spawnBurst: "0" }, {})).toThrow(/^--spawn-burst: /);
    expect(() => loadControllerConfig({ local: "{command: [x]" }, {})).toThrow(/^--local: invalid YAML\/JSON/);
    expect(() => loadControllerConfig({ local: "{comand: [x]}" }, {})).toThrow(/^--local: unknown key\(s\) comand$/);
  });
});

describe("arclight controller flags", () => {
  it("registers one --kebab-case flag per config key plus --key-file and the --poll-interval, --spawn-rate and --ttl-after-finished aliases", async () => {
    const controller = (await buildProgram()).commands.find((c) => c.name() === "controller")!;
    const longs = controller.options.map((o) => o.long);
    const expected = ControllerConfigSchema.keyof().options.map((key) => `--${key.replaceAll("_", "-")}`);
    const extra = ["--config", "--key-file", "--poll-interval", "--spawn-rate", "--ttl-after-finished"];
    expect([...longs].sort()).toEqual([...extra, ...expected].sort());
    expect(longs).toEqual(expect.arrayContaining(["--poll-interval-seconds", "--spawn-burst", "--list-page-size"]));
    expect(CONTROLLER_FLAGS.map((f) => f.key)).toEqual(ControllerConfigSchema.keyof().options);
  });
});
