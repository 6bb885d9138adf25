import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import { startPhase } from "./progress.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("startPhase", () => {
  it("shows the time left on a terminal's bar", () => {
    vi.useFakeTimers({ now: 0 });
    const stream = Object.assign(new PassThrough(), { isTTY: true, columns: 100 });
    let text = "";
    stream.on("data", (chunk: Buffer) => {
      text += chunk.toString();
    });
    const phase = startPhase("SFT", 4, stream as unknown as NodeJS.WriteStream);
    vi.advanceTimersByTime(10_000);
    phase.update(1);
    vi.advanceTimersByTime(10_000);
    phase.update(2);
    vi.advanceTimersByTime(1000);
    phase.finish("done");
    expect(text).toMatch(/SFT \[.*\] 2\/4 ETA 20s/);
  });
});
