import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ControllerHarness, startHarness } from "../src/controller/testing/harness.js";

let h: ControllerHarness;
beforeEach(async () => {
  h = await startHarness();
});
afterEach(async () => {
  await h.close();
});

/** Largest number of agents between their start and end marks at any instant (an end at time t precedes a start at t). */
function maxConcurrent(marks: string): number {
  const points = marks
    .trim()
    .split("\n")
    .map((line) => {
      const [kind, ns] = line.split(" ");
      return { t: BigInt(ns!), delta: kind === "start" ? 1 : -1 };
    })
    .sort((a, b) => (a.t === b.t ? a.delta - b.delta : a.t < b.t ? -1 : 1));
  let live = 0;
  let max = 0;
  for (const p of points) {
    live += p.delta;
    max = Math.max(max, live);
  }
  return max;
}

describe("pool size", () => {
  it("never runs more agents at once than the pool size, as measured by the agents' own start/end marks", async () => {
    const marks = join(h.dir, "marks.txt");
    const agent = h.script(
      "marks.sh",
      '#!/bin/sh\necho "start $(date +%s%N)" >> "$MARKS"\nsleep 0.2\necho "end $(date +%s%N)" >> "$MARKS"\n',
    );
    const rollouts = await h.create(
      Array.from({ length: 18 }, () => ({
        input: { marks },
        config: { local: { command: [agent], env_map: { MARKS: "input.marks" } } },
      })),
    );
    h.controller({ pool_size: 3 }).start();
    const done = await h.waitTerminal(rollouts.map((r) => r.rollout_id));
    expect(done.every((r) => r.status.state === "succeeded")).toBe(true);
    const text = readFileSync(marks, "utf8");
    expect(text.trim().split("\n")).toHaveLength(36);
    // The pool is both respected and used.
    expect(maxConcurrent(text)).toBe(3);
  });

  it("takes 200 rollouts through a pool of 8 to the right terminal states", async () => {
    // Every 10th rollout exits 1, every 10th+1 exits 5; the rest succeed.
    const codeOf = (i: number) => (i % 10 === 3 ? 1 : i % 10 === 4 ? 5 : 0);
    const rollouts = await h.create(
      Array.from({ length: 200 }, (_, i) => ({ rollout_id: `bulk-${i}`, input: { code: codeOf(i) } })),
    );
    h.controller({
      pool_size: 8,
      log_tail_bytes: 1024,
      local: { command: ["sh", "-c", "exit $CODE"], env_map: { CODE: "input.code" } },
    }).start();
    const done = await h.waitTerminal(
      rollouts.map((r) => r.rollout_id),
      120_000,
    );
    done.forEach((rollout, i) => {
      const code = codeOf(i);
      expect(rollout.status.state).toBe(code === 0 ? "succeeded" : "failed");
      expect(rollout.status.error_message).toBe(code === 0 ? null : `exited with code ${code}`);
    });
    const terminal = await h.client.terminal(0, 1000);
    expect(terminal.total_terminal).toBe(200);
    expect(new Set(terminal.items.map((i) => i.rollout_id)).size).toBe(200);
  });
});
