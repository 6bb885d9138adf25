import { join } from "node:path";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { readFakeVllmRecord, writeFakeVllmBin } from "../gateway/testing/fake-vllm-bin.js";
import { pollUntil } from "../testing/poll.js";
import { tempDir } from "../testing/temp-dir.js";
import { VllmLaunchSchema } from "../trainer/config.js";
import { VllmSamplerError } from "../trainer/vllm-serving.js";
import { type ReplicaWeights, replicaCommand, type VllmMode } from "./vllm-command.js";
import { VllmReplicas } from "./vllm-replicas.js";

const silent = pino({ level: "silent" });
const LORA: VllmMode = { servedModelName: "policy-base", lora: { rank: 4, maxLoras: 1 }, sleep: true };

/** Whether a process exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits until `check` holds (checked every 50 ms, at most `timeoutMs`). */
const waitFor = (what: string, check: () => boolean, timeoutMs: number) =>
  pollUntil(what, () => (check() ? true : undefined), timeoutMs, 50);

/** Replicas of the fake `vllm` in a temp dir, recording to `record`; `env` adds test hooks. */
function setup(launch: Record<string, unknown> = {}) {
  const dir = tempDir("arclight-vllm-replicas-");
  const record = join(dir, "record.jsonl");
  const settings = VllmLaunchSchema.parse({
    command: writeFakeVllmBin(dir),
    restart_backoff_seconds: 0.05,
    health_timeout_seconds: 60,
    ...launch,
    env: { FAKE_VLLM_RECORD: record, ...(launch.env as Record<string, string> | undefined) },
  });
  const weights: { current: ReplicaWeights } = { current: { model: "/models/base", adapters: [] } };
  const starts = () => readFakeVllmRecord(record).filter((r) => r.kind === "start");
  return { dir, record, settings, weights, starts };
}

describe("managed vLLM replicas", () => {
  const running: VllmReplicas[] = [];
  afterEach(async () => {
    for (const replicas of running.splice(0)) await replicas.stop();
  });
  const start = async (s: ReturnType<typeof setup>, count: number, mode: VllmMode = LORA) => {
    const replicas = await VllmReplicas.start({
      launch: s.settings,
      replicas: count,
      command: (index, port) => replicaCommand(s.settings, mode, s.weights.current, index, port),
      logger: silent,
      logDir: s.dir,
      stopGraceMs: 5_000,
    });
    running.push(replicas);
    return replicas;
  };

  it("starts each replica with the mode's flags and its GPUs, and is up once /health answers 200", async () => {
    const s = setup({ gpus: ["0", "1,2"], args: ["--gpu-memory-utilization", "0.4"] });
    const replicas = await start(s, 2);
    expect(replicas.endpoints).toHaveLength(2);
    for (const endpoint of replicas.endpoints) {
      const health = await fetch(endpoint.replace(/\/v1$/, "/health"));
      expect(health.status).toBe(200);
    }
    const starts = s.starts().sort((a, b) => String(a.cudaVisibleDevices).localeCompare(String(b.cudaVisibleDevices)));
    expect(starts.map((r) => r.cudaVisibleDevices)).toEqual(["0", "1,2"]);
    const port = new URL(replicas.endpoints[0]!).port;
    const first = starts.find((r) => (r.argv as string[]).includes(port))!;
    expect(first.argv).toEqual([
      ...["serve", "/models/base", "--served-model-name", "policy-base", "--host", "127.0.0.1", "--port", port],
      ...["--max-logprobs", "20", "--enable-lora", "--max-lora-rank", "8", "--max-loras", "1"],
      ...["--enable-sleep-mode", "--gpu-memory-utilization", "0.4"],
    ]);
    expect(first).toMatchObject({ devMode: "1", runtimeLora: "True" });
  }, 60_000);

  it("restarts a replica killed with SIGKILL, from the weights current at the restart, and cleans its group", async () => {
    const s = setup();
    const replicas = await start(s, 1);
    const [before] = s.starts();
    const pid = replicas.pids[0]!;
    s.weights.current = { model: "/models/base", adapters: [{ name: "policy", path: "/runs/x/adapters/v3" }] };
    process.kill(pid, "SIGKILL");
    await waitFor("the restart", () => s.starts().length === 2, 30_000);
    await replicas.ready();
    expect(replicas.pids[0]).not.toBe(pid);
    const after = s.starts()[1]!;
    expect(after.argv).toContain("--lora-modules");
    expect((after.argv as string[]).at((after.argv as string[]).indexOf("--lora-modules") + 1)).toBe(
      "policy=/runs/x/adapters/v3",
    );
    // The dead leader's engine core went with its group.
    await waitFor("the old engine core to end", () => !alive(before!.engineCorePid as number), 10_000);
  }, 60_000);

  it("gives up after max_restarts and names the replica", async () => {
    const s = setup({ max_restarts: 0 });
    const replicas = await start(s, 1);
    process.kill(replicas.pids[0]!, "SIGKILL");
    await waitFor("the exit", () => replicas.pids[0] === null, 10_000);
    await expect(replicas.ready()).rejects.toThrow(/vLLM replica 0 \(port \d+\) exited \(SIGKILL\) after 0 restarts/);
  }, 60_000);

  it("a replica that exits before it is healthy fails the start with the tail of its output", async () => {
    const s = setup({ env: { FAKE_VLLM_FAIL_START: "CUDA out of memory. Tried to allocate 2.00 GiB" } });
    const failed = start(s, 2);
    await expect(failed).rejects.toBeInstanceOf(VllmSamplerError);
    await expect(failed).rejects.toThrow(/exited \(code 1\) before GET \/health answered 200; command: .*vllm serve/);
    await expect(failed).rejects.toThrow("CUDA out of memory");
  }, 60_000);

  it("an unknown flag in launch.args fails the start with vLLM's argparse message", async () => {
    const s = setup({ args: ["--no-such-flag"] });
    await expect(start(s, 1)).rejects.toThrow("vllm: error: unrecognized arguments: --no-such-flag");
  }, 60_000);

  it("a replica not healthy in time is killed and named with the timeout key", async () => {
    const s = setup({ health_timeout_seconds: 0.5, env: { FAKE_VLLM_STARTUP_MS: "30000" } });
    await expect(start(s, 1)).rejects.toThrow(/within 0.5 s \(engine.vllm.launch.health_timeout_seconds\)/);
  }, 60_000);

  it("stop ends every replica's whole process group", async () => {
    const s = setup();
    const replicas = await start(s, 2);
    const pids = [...replicas.pids] as number[];
    const cores = s.starts().map((r) => r.engineCorePid as number);
    await replicas.stop();
    for (const pid of pids) expect(alive(pid)).toBe(false);
    // The engine cores got SIGKILL with their group; the kernel ends them a moment later.
    await waitFor("the engine cores to end", () => cores.every((pid) => !alive(pid)), 5_000);
  }, 60_000);
});
