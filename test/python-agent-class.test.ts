import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isPythonAgentClass, resolveLaunch } from "../src/controller/local.js";
import { type ControllerHarness, startHarness } from "../src/controller/testing/harness.js";
import { skipWithoutPython, testPython } from "../src/testing/python.js";

/** The Python SDK from this checkout (what `pip install ./sdk/python` installs). */
const SDK_PATH = resolve(import.meta.dirname, "../sdk/python");

/** An AGL LitAgent-shaped class: the method by mode, the task and the resources written to events. */
const AGENTS_PY = `
from arclight_agent import emit_event, from_env

class Solver:
    def training_rollout(self, task, resources, rollout):
        env = from_env()
        emit_event("seen", {"method": "training_rollout", "task": task, "mode": rollout["mode"],
                            "endpoint": resources["main_llm"].endpoint, "key_is_token": env.api_key.startswith("aglt1.")})
        return 1.0 if task["answer"] == "5" else 0.0

    def validation_rollout(self, task, resources, rollout):
        emit_event("seen", {"method": "validation_rollout", "mode": rollout["mode"]})
        return 0.5

class Broken:
    def rollout(self, task, resources, rollout):
        raise RuntimeError("calculator server refused the call")
`;

describe("Python agent_class names", () => {
  it("tells a Python package.module:Class from a JS module path", () => {
    expect(isPythonAgentClass("recipes.calc_x.agent:CalcAgent")).toBe(true);
    expect(isPythonAgentClass("agent:Agent")).toBe(true);
    expect(isPythonAgentClass("agent.mjs:Agent")).toBe(false);
    expect(isPythonAgentClass("agents.js:Solver")).toBe(false);
    expect(isPythonAgentClass("dist/agent.js:Agent")).toBe(false);
    expect(isPythonAgentClass("./agent.ts:Agent")).toBe(false);
    expect(isPythonAgentClass("agent.py:Agent")).toBe(true); // module `agent.py`: Python's own error names it
    expect(isPythonAgentClass("my_agent")).toBe(false);
  });

  it("runs a Python class with the configured interpreter through the arclight_agent runner", () => {
    const launch = resolveLaunch({ agent_class: "pkg.mod:Cls", env_map: {} }, { python: "/opt/py/bin/python" });
    expect(launch).toEqual({ file: "/opt/py/bin/python", args: ["-m", "arclight_agent", "run", "pkg.mod:Cls"] });
    expect(resolveLaunch({ agent_class: "pkg.mod:Cls", env_map: {} }).file).toBe("python3");
  });
});

describe.skipIf(skipWithoutPython())("a Python agent_class run by the controller", () => {
  let h: ControllerHarness;
  beforeEach(async () => {
    h = await startHarness({ PYTHONPATH: SDK_PATH, PYTHONDONTWRITEBYTECODE: "1" });
    mkdirSync(join(h.dir, "pyagents"));
    writeFileSync(join(h.dir, "pyagents", "__init__.py"), "");
    writeFileSync(join(h.dir, "pyagents", "solver.py"), AGENTS_PY);
  });
  afterEach(async () => {
    await h.close();
  });

  it("calls training_rollout or validation_rollout by mode with the attempt's token, and posts the returned reward", async () => {
    const local = { local: { agent_class: "pyagents.solver:Solver" } };
    const [train, val] = await h.create([
      { input: { question: "2+3", answer: "5" }, config: local },
      { input: { question: "2+2", answer: "4" }, is_train: false, config: local },
    ]);
    h.controller({ python: testPython()! }).start();
    const done = await h.waitTerminal([train!.rollout_id, val!.rollout_id], 60_000);
    expect(done.map((r) => r.status.state)).toEqual(["succeeded", "succeeded"]);

    const [seen] = await h.client.getEvents(train!.rollout_id, { eventType: "seen" });
    expect(seen!.data).toEqual({
      method: "training_rollout",
      task: { question: "2+3", answer: "5" },
      mode: "train",
      endpoint: `${h.gateway.url}/proxy/rollout/${train!.rollout_id}/attempt/0/mode/train/openai/v1`,
      key_is_token: true,
    });
    const [trainReward] = await h.client.getEvents(train!.rollout_id, { eventType: "reward" });
    expect(trainReward!.data).toEqual({ value: 1, source: "pyagents.solver:Solver" });
    const [valSeen] = await h.client.getEvents(val!.rollout_id, { eventType: "seen" });
    expect(valSeen!.data).toEqual({ method: "validation_rollout", mode: "val" });
    const [valReward] = await h.client.getEvents(val!.rollout_id, { eventType: "reward" });
    expect(valReward!.data).toMatchObject({ value: 0.5 });
  });

  it("fails a rollout whose class raises, with the traceback in its log event", async () => {
    const [rollout] = await h.create([{ input: {}, config: { local: { agent_class: "pyagents.solver:Broken" } } }]);
    h.controller({ python: testPython()! }).start();
    const [done] = await h.waitTerminal([rollout!.rollout_id], 60_000);
    expect(done!.status.error_message).toBe("exited with code 1");
    const [log] = await h.client.getEvents(rollout!.rollout_id, { eventType: "log" });
    const text = (log!.data as { text: string }).text;
    expect(text).toContain("Traceback (most recent call last)");
    expect(text).toContain("RuntimeError: calculator server refused the call");
  });

  it("refuses a rollout's own Python class that the controller does not allow, as for a JS class", async () => {
    const [rollout] = await h.create([{ input: {}, config: { local: { agent_class: "pyagents.solver:Solver" } } }]);
    h.controller({
      python: testPython()!,
      allow_any_command: false,
      allowed_agent_classes: ["other.mod:Agent"],
    }).start();
    const [done] = await h.waitTerminal([rollout!.rollout_id], 60_000);
    expect(done!.status.state).toBe("failed");
    expect(done!.status.error_message).toContain("is not one this controller runs");
  });
});
