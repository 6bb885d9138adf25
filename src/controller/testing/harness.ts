/** @module Controller test harness: a real gateway on 127.0.0.1, a client, a temp dir, and controllers. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { GatewayClient } from "../../gateway/client.js";
import { startTestGateway, type TestGateway } from "../../gateway/testing/serve.js";
import type { Rollout, RolloutCreateInput } from "../../protocol/index.js";
import type { Store } from "../../store/store.js";
import { pollUntil } from "../../testing/poll.js";
import { type ControllerConfigInput, ControllerConfigSchema } from "../config.js";
import { LocalController, type LocalControllerOptions } from "../reconcile.js";

/** A gateway, a client, a temp dir and the controllers started on them. */
export interface ControllerHarness {
  gateway: TestGateway;
  client: GatewayClient;
  /** Temp dir: agent scripts, marks, the controller state file. */
  dir: string;
  /** Writes `text` to `dir/name` (mode 755) and returns its path. */
  script(name: string, text: string): string;
  /** A new controller (not started) sharing this harness's state file; `overrides` win over test defaults. */
  controller(overrides?: ControllerConfigInput): LocalController;
  /** A new controller (not started) as {@link ControllerHarness.controller}, with kill points (see `LocalControllerOptions`). */
  controllerWith(killPoints: LocalControllerOptions["killPoints"], overrides?: ControllerConfigInput): LocalController;
  /** Creates rollouts. */
  create(creates: RolloutCreateInput[]): Promise<Rollout[]>;
  /** Polls `probe` every 20 ms until it returns a value other than undefined; fails after `timeoutMs`. */
  waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs?: number): Promise<T>;
  /** Waits until every rollout in `ids` is succeeded or failed; returns them in `ids` order. */
  waitTerminal(ids: string[], timeoutMs?: number): Promise<Rollout[]>;
  /** Shuts down every controller, closes client and gateway, removes the temp dir. */
  close(): Promise<void>;
}

/** Starts a harness; agents inherit only PATH plus `baseEnv`. */
export async function startHarness(baseEnv: Record<string, string> = {}, store?: Store): Promise<ControllerHarness> {
  const gateway = await startTestGateway({ key: "test-key" }, store);
  const client = new GatewayClient({ baseUrl: gateway.url, key: "test-key" });
  const dir = mkdtempSync(join(tmpdir(), "arclight-controller-"));
  const controllers: LocalController[] = [];
  const logger = pino({ level: process.env.ARCLIGHT_TEST_LOG ?? "silent" });
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", ...baseEnv };

  const waitFor: ControllerHarness["waitFor"] = (what, probe, timeoutMs = 30_000) =>
    pollUntil(what, probe, timeoutMs, 20);
  const controllerWith: ControllerHarness["controllerWith"] = (killPoints, overrides = {}) => {
    const config = ControllerConfigSchema.parse({
      gateway_url: gateway.url,
      key: "test-key",
      poll_interval_seconds: 0.05,
      kill_grace_seconds: 0.5,
      spawn_rate_per_second: 1000,
      state_file: join(dir, "controller-state.json"),
      cwd: dir,
      // These tests create rollouts with whatever command they exercise; test/controller-policy.test.ts turns this off.
      allow_any_command: true,
      ...overrides,
    });
    const controller = new LocalController({
      client,
      config,
      logger,
      baseEnv: env,
      ...(killPoints ? { killPoints } : {}),
    });
    controllers.push(controller);
    return controller;
  };

  return {
    gateway,
    client,
    dir,
    script(name, text) {
      const path = join(dir, name);
      writeFileSync(path, text, { mode: 0o755 });
      return path;
    },
    controller(overrides = {}) {
      return controllerWith(undefined, overrides);
    },
    controllerWith,
    create(creates) {
      return client.createRollouts(creates);
    },
    waitFor,
    async waitTerminal(ids, timeoutMs) {
      // Follow the terminal cursor (cheap to poll), then read the rollouts once.
      const wanted = new Set(ids);
      let after = 0;
      await waitFor(
        `${ids.length} terminal rollouts`,
        async () => {
          const page = await client.terminal(after, 10_000);
          after = page.next_after;
          for (const item of page.items) wanted.delete(item.rollout_id);
          return wanted.size === 0 ? true : undefined;
        },
        timeoutMs,
      );
      return Promise.all(ids.map(async (id) => (await client.getRollout(id)).rollout));
    },
    async close() {
      for (const controller of controllers) await controller.shutdown(2000);
      await client.close();
      await gateway.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
