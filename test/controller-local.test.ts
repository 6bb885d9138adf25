import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { processAlive } from "../src/controller/local.js";
import { type ControllerHarness, startHarness } from "../src/controller/testing/harness.js";

let h: ControllerHarness;
beforeEach(async () => {
  h = await startHarness();
});
afterEach(async () => {
  await h.close();
});

describe("local controller runs rollouts as real processes", () => {
  it("marks a rollout succeeded when its node agent exits 0, stores no log event", async () => {
    const agent = h.script("ok.mjs", "console.log('hello from the agent');\n");
    const [rollout] = await h.create([{ input: { q: 1 }, config: { local: { command: ["node", agent] } } }]);
    h.controller().start();
    const [done] = await h.waitTerminal([rollout!.rollout_id]);
    expect(done!.status.state).toBe("succeeded");
    expect(done!.status.error_message).toBeNull();
    expect(done!.status.last_attempt_id).toBe("0");
    expect(await h.client.getEvents(rollout!.rollout_id, { eventType: "log" })).toEqual([]);
  });

  it("fails a rollout with 'exited with code N' and stores the last 64 KiB of output as a log event", async () => {
    // 100 KiB on stdout, then a last line on stderr: the tail keeps exactly the newest 65536 bytes.
    const agent = h.script(
      "fail.mjs",
      "process.stdout.write('x'.repeat(100 * 1024));\nprocess.stderr.write('the last words\\n');\nprocess.exitCode = 3;\n",
    );
    const [rollout] = await h.create([{ input: {}, config: { local: { command: ["node", agent] } } }]);
    h.controller().start();
    const [done] = await h.waitTerminal([rollout!.rollout_id]);
    expect(done!.status.state).toBe("failed");
    expect(done!.status.error_message).toBe("exited with code 3");
    const logs = await h.client.getEvents(rollout!.rollout_id, { eventType: "log" });
    expect(logs).toHaveLength(1);
    const data = logs[0]!.data as { text: string; exit_code: number; dropped_bytes: number };
    expect(data.exit_code).toBe(3);
    expect(Buffer.byteLength(data.text)).toBe(65_536);
    expect(data.text.endsWith("the last words\n")).toBe(true);
    expect(data.dropped_bytes).toBe(100 * 1024 + "the last words\n".length - 65_536);
  });

  it("fails a rollout killed by a signal with 'killed by SIGNAL'", async () => {
    const [rollout] = await h.create([{ input: {}, config: { local: { command: ["sh", "-c", "kill -9 $$"] } } }]);
    h.controller().start();
    const [done] = await h.waitTerminal([rollout!.rollout_id]);
    expect(done!.status.error_message).toBe("killed by SIGKILL");
  });

  it("fails a rollout whose command does not exist with 'failed to start'", async () => {
    const [rollout] = await h.create([{ input: {}, config: { local: { command: ["/nonexistent/agent-binary"] } } }]);
    h.controller().start();
    const [done] = await h.waitTerminal([rollout!.rollout_id]);
    expect(done!.status.state).toBe("failed");
    expect(done!.status.error_message).toMatch(/^failed to start: .*ENOENT/);
  });

  it("kills a timed-out rollout's whole process group, grandchild included, and fails it 'timed out after N s'", async () => {
    // The shell script starts a sleeping grandchild, records its pid, and waits on it forever.
    const agent = h.script("grandchild.sh", '#!/bin/sh\nsleep 300 &\necho $! > "$PID_FILE"\nwait\n');
    const pidFile = join(h.dir, "grandchild.pid");
    const [rollout] = await h.create([
      {
        input: { pid_file: pidFile },
        config: { timeout_seconds: 1, local: { command: [agent], env_map: { PID_FILE: "input.pid_file" } } },
      },
    ]);
    h.controller().start();
    const grandchildPid = await h.waitFor("grandchild pid", () => {
      try {
        const pid = Number(readFileSync(pidFile, "utf8"));
        return pid > 0 ? pid : undefined;
      } catch {
        return undefined;
      }
    });
    expect(processAlive(grandchildPid)).toBe(true);
    const [done] = await h.waitTerminal([rollout!.rollout_id]);
    expect(done!.status.state).toBe("failed");
    expect(done!.status.error_message).toBe("timed out after 1 s");
    await h.waitFor("grandchild gone", () => (processAlive(grandchildPid) ? undefined : true), 5000);
    const logs = await h.client.getEvents(rollout!.rollout_id, { eventType: "log" });
    expect((logs[0]!.data as { reason: string }).reason).toBe("timed out after 1 s");
  });

  it("runs a failed attempt again under a new attempt id when max_attempts is 2", async () => {
    // Fails on attempt "0", succeeds on attempt "1".
    const command = ["sh", "-c", 'echo "attempt $AGL_ATTEMPT_ID"; [ "$AGL_ATTEMPT_ID" = 1 ]'];
    const [rollout] = await h.create([{ input: {}, config: { max_attempts: 2, local: { command } } }]);
    h.controller().start();
    const [done] = await h.waitTerminal([rollout!.rollout_id]);
    expect(done!.status.state).toBe("succeeded");
    expect(done!.status.last_attempt_id).toBe("1");
    const firstAttemptLogs = await h.gateway.store.listEvents(rollout!.rollout_id, {
      attemptId: "0",
      eventType: "log",
    });
    expect((firstAttemptLogs[0]!.data as { text: string }).text).toBe("attempt 0\n");
    expect((await h.client.getRollout(rollout!.rollout_id)).attempts).toEqual(["0"]);
  });

  it("fails a rollout after max_attempts failed attempts, keeping the last reason", async () => {
    const [rollout] = await h.create([
      { input: {}, config: { max_attempts: 2, local: { command: ["sh", "-c", "exit 7"] } } },
    ]);
    h.controller().start();
    const [done] = await h.waitTerminal([rollout!.rollout_id]);
    expect(done!.status.state).toBe("failed");
    expect(done!.status.last_attempt_id).toBe("1");
    expect(done!.status.error_message).toBe("exited with code 7");
    expect((await h.client.getRollout(rollout!.rollout_id)).attempts).toEqual(["0", "1"]);
  });

  it("kills all live processes on shutdown and fails their rollouts 'controller shutdown'", async () => {
    const [rollout] = await h.create([{ input: {}, config: { local: { command: ["sleep", "300"] } } }]);
    const controller = h.controller();
    controller.start();
    // The rollout is marked running (and leased) before its process starts: wait for the state file's record.
    const pid = await h.waitFor("the process recorded", () => {
      try {
        const state = JSON.parse(readFileSync(join(h.dir, "controller-state.json"), "utf8"));
        return state.processes[rollout!.rollout_id]?.pid as number | undefined;
      } catch {
        return undefined;
      }
    });
    expect((await h.client.getRollout(rollout!.rollout_id)).rollout.status.state).toBe("running");
    expect(processAlive(pid)).toBe(true);
    await controller.shutdown();
    expect(processAlive(pid)).toBe(false);
    const { rollout: after } = await h.client.getRollout(rollout!.rollout_id);
    expect(after.status.state).toBe("failed");
    expect(after.status.error_message).toBe("controller shutdown");
  });
});
