/** @module Tests of the engine spec a training command builds from its config's engine section and flags. */
import { describe, expect, it } from "vitest";
import { parseTrainerConfig } from "../trainer/config.js";
import { CliError } from "./cli-error.js";
import { engineSpecOf } from "./engine-spec.js";

const flags = { preset: "tiny", engineSeed: "3" };
const section = (engine: Record<string, unknown>) => parseTrainerConfig({ name: "t", engine }).engine;

describe("engineSpecOf", () => {
  it("passes engine.train_threads and engine.decode_threads to the embedded engine (default 1)", () => {
    expect(engineSpecOf(section({}), flags)).toEqual({
      kind: "embedded",
      model: "tiny",
      seed: 3,
      trainThreads: 1,
      decodeThreads: 1,
    });
    expect(engineSpecOf(section({ train_threads: 2, decode_threads: 3 }), flags)).toMatchObject({
      trainThreads: 2,
      decodeThreads: 3,
    });
  });

  it("refuses train_threads above 1 with the torch engine, naming the key", () => {
    expect(() => engineSpecOf(section({ kind: "torch", train_threads: 2 }), flags)).toThrow(CliError);
    expect(() => engineSpecOf(section({ kind: "torch", train_threads: 2 }), flags)).toThrow(
      /engine\.train_threads 2 with engine\.kind torch/,
    );
    expect(() => engineSpecOf(section({ train_threads: 2 }), { ...flags, engine: "torch" })).toThrow(
      /engine\.train_threads 2 with --engine torch/,
    );
    const torch = engineSpecOf(section({ kind: "torch" }), flags);
    expect(torch.kind).toBe("torch");
    expect(JSON.stringify(torch)).not.toContain("train_threads");
    expect(JSON.stringify(torch)).not.toContain("decode_threads");
    expect(() => engineSpecOf(section({ kind: "torch", decode_threads: 2 }), flags)).toThrow(
      /engine\.decode_threads 2 with engine\.kind torch/,
    );
  });

  it("the config refuses a train_threads or decode_threads that is not a positive integer", () => {
    expect(() => section({ train_threads: 0 })).toThrow(/train_threads/);
    expect(() => section({ train_threads: 1.5 })).toThrow(/train_threads/);
    expect(() => section({ decode_threads: 0 })).toThrow(/decode_threads/);
    expect(() => section({ decode_threads: 65 })).toThrow(/decode_threads/);
  });
});
