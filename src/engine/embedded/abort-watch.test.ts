/** @module Tests of the shared abort watch: one listener per signal, callbacks run once, detaching cleans up. */
import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { onAbort } from "./abort-watch.js";

describe("onAbort", () => {
  it("puts one listener on a signal however many watch it, and runs every callback once on abort", () => {
    const controller = new AbortController();
    const runs: number[] = [];
    for (let i = 0; i < 50; i++) onAbort(controller.signal, () => runs.push(i));
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    controller.abort();
    controller.abort();
    expect(runs).toHaveLength(50);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("removes the listener when the last watcher detaches, and a detached callback never runs", () => {
    const controller = new AbortController();
    let ran = 0;
    const detach = [1, 2, 3].map(() => onAbort(controller.signal, () => ran++));
    detach[0]!();
    detach[1]!();
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    detach[2]!();
    detach[2]!(); // twice is harmless
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    onAbort(controller.signal, () => ran++); // a new watcher after all left: a new listener
    controller.abort();
    expect(ran).toBe(1);
  });

  it("runs at once for a signal that has aborted already, adding no listener", () => {
    let ran = 0;
    const detach = onAbort(AbortSignal.abort(), () => ran++);
    expect(ran).toBe(1);
    detach();
  });
});
