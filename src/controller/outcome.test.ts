import { describe, expect, it } from "vitest";
import { describeExit } from "./outcome.js";

describe("describeExit", () => {
  it("names every way an agent process ends", () => {
    expect(describeExit({ code: 0, signal: null }, null, 60)).toEqual({ state: "succeeded", reason: null });
    expect(describeExit({ code: 2, signal: null }, null, 60).reason).toBe("exited with code 2");
    expect(describeExit({ code: null, signal: "SIGSEGV" }, null, 60).reason).toBe("killed by SIGSEGV");
    expect(describeExit({ code: null, signal: null, spawnError: new Error("spawn x ENOENT") }, null, 60).reason).toBe(
      "failed to start: spawn x ENOENT",
    );
  });

  it("lets the controller's own kill cause win over the exit status", () => {
    expect(describeExit({ code: null, signal: "SIGTERM" }, "timeout", 1.5).reason).toBe("timed out after 1.5 s");
    expect(describeExit({ code: 0, signal: null }, "shutdown", 60).reason).toBe("controller shutdown");
    expect(describeExit({ code: null, signal: null }, "lost", 60).reason).toBe("controller lost the process");
  });
});
