import { Help } from "commander";
import { describe, expect, it } from "vitest";
import { buildProgram, COMMANDS } from "./program.js";

describe("arclight program", () => {
  it("lists each command with the same name, line and description as its module registers", async () => {
    const full = await buildProgram();
    const help = new Help();
    expect(
      full.commands.map((cmd) => ({
        name: cmd.name(),
        term: help.subcommandTerm(cmd),
        description: cmd.description(),
      })),
    ).toEqual(COMMANDS.map(({ name, term, description }) => ({ name, term, description })));
  });

  it("registers only the invoked command in full, and prints the same top-level help", async () => {
    const full = await buildProgram();
    const lazy = await buildProgram(["node", "arclight", "train", "x.yaml", "--log-level", "warn"]);
    const options = (name: string, program: typeof full) =>
      program.commands.find((cmd) => cmd.name() === name)?.options.length;
    expect(options("train", lazy)).toBe(options("train", full));
    expect(options("gateway", lazy)).toBe(0);
    expect(
      (await buildProgram(["node", "arclight", "help", "sft"])).commands.find((c) => c.name() === "sft")?.options
        .length,
    ).toBeGreaterThan(0);
    const bare = await buildProgram(["node", "arclight", "--help"]);
    expect(bare.helpInformation()).toBe(full.helpInformation());
  });
});
