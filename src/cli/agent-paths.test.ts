import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../testing/temp-dir.js";
import { resolveAgentPaths } from "./agent-paths.js";

describe("resolveAgentPaths", () => {
  it("makes the command's files beside the config absolute, and leaves programs, options and code alone", () => {
    const base = tempDir("arclight-agent-paths-");
    mkdirSync(join(base, "agents"));
    writeFileSync(join(base, "agent.py"), "");
    writeFileSync(join(base, "agents", "solver.ts"), "");
    const code = "console.log('x')";
    const command = ["python3", "agent.py", "--model", "policy", "-e", code, "missing.py", "agents", "/abs/x.py"];
    expect(resolveAgentPaths({ command, agent_class: null }, base).command).toEqual([
      "python3",
      join(base, "agent.py"),
      "--model",
      "policy",
      "-e",
      code,
      "missing.py",
      "agents",
      "/abs/x.py",
    ]);
    const agentClass = resolveAgentPaths({ command: [], agent_class: "agents/solver.ts:solve" }, base).agent_class;
    expect(agentClass).toBe(`${join(base, "agents", "solver.ts")}:solve`);
    expect(resolveAgentPaths({ command: [], agent_class: "pkg/none.js:x" }, base).agent_class).toBe("pkg/none.js:x");
  });

  it("resolves the bundled calculator config's agent beside it", () => {
    const examples = join(import.meta.dirname, "..", "..", "examples", "calculator");
    const { command } = resolveAgentPaths(
      { command: ["node", "--import", "tsx", "agent.ts"], agent_class: null },
      examples,
    );
    expect(command).toEqual(["node", "--import", "tsx", join(examples, "agent.ts")]);
  });
});
