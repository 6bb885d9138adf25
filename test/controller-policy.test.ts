/**
 * Scenario: a rollout names the program the controller should run (`config.local`). The controller runs only what its
 * own configuration allows (a rollout whose command is `sh -c …` must not get it run). Real gateway on a
 * SQLite file, real controller, real child processes; a marker file tells whether anything was started.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ControllerHarness, startHarness } from "../src/controller/testing/harness.js";
import { openStore } from "../src/store/open.js";

let h: ControllerHarness;
let dbDir: string;
beforeEach(async () => {
  dbDir = mkdtempSync(join(tmpdir(), "arclight-policy-"));
  h = await startHarness({}, await openStore(`sqlite:${join(dbDir, "gateway.db")}`));
});
afterEach(async () => {
  await h.close();
  rmSync(dbDir, { recursive: true, force: true });
});

/** The controller's settings with the rollout-command policy on. */
const STRICT = { allow_any_command: false };

describe("controller launch policy", () => {
  it("fails a rollout whose command is not allowed, naming it, and starts nothing", async () => {
    const marker = join(h.dir, "pwned");
    const [rollout] = await h.create([{ input: {}, config: { local: { command: ["sh", "-c", `touch ${marker}`] } } }]);
    h.controller(STRICT).start();
    const [done] = await h.waitTerminal([rollout!.rollout_id]);
    expect(done!.status.state).toBe("failed");
    expect(done!.status.error_message).toBe(
      `config.local.command ["sh","-c","touch ${marker}"] is not one this controller runs: add it to the ` +
        "controller's allowed_commands (or make it the controller's own local.command)",
    );
    expect(existsSync(marker)).toBe(false);
  });

  it("runs a command listed in allowed_commands (exact argv) and the controller's own local", async () => {
    const allowed = ["sh", "-c", "exit 0"];
    const [listed, own, near] = await h.create([
      { input: {}, config: { local: { command: allowed } } },
      { input: {}, config: { local: { command: ["true"] } } },
      { input: {}, config: { local: { command: [...allowed, "extra"] } } },
    ]);
    h.controller({ ...STRICT, allowed_commands: [allowed], local: { command: ["true"] } }).start();
    const done = await h.waitTerminal([listed!.rollout_id, own!.rollout_id, near!.rollout_id]);
    expect(done.map((r) => r.status.state)).toEqual(["succeeded", "succeeded", "failed"]);
  });

  it("refuses an agent_class not in allowed_agent_classes", async () => {
    const [rollout] = await h.create([{ input: {}, config: { local: { agent_class: "/tmp/evil.js:Agent" } } }]);
    h.controller(STRICT).start();
    const [done] = await h.waitTerminal([rollout!.rollout_id]);
    expect(done!.status.error_message).toMatch(/agent_class "\/tmp\/evil.js:Agent" is not one this controller runs/);
  });

  it("refuses an env_map that sets a code-loading variable even for an allowed command", async () => {
    const [rollout] = await h.create([
      {
        input: { lib: "/tmp/evil.so" },
        config: { local: { command: ["true"], env_map: { LD_PRELOAD: "input.lib" } } },
      },
    ]);
    h.controller({ ...STRICT, allowed_commands: [["true"]] }).start();
    const [done] = await h.waitTerminal([rollout!.rollout_id]);
    expect(done!.status.state).toBe("failed");
    expect(done!.status.error_message).toBe(
      "config.local.env_map LD_PRELOAD: a rollout may not set a variable that loads code",
    );
  });
});
