import { describe, expect, it } from "vitest";
import { CliError } from "./cli-error.js";
import { temperatureArgs } from "./gateway-child-flags.js";

describe("temperatureArgs", () => {
  it("passes nothing to the gateway child without the flag", () => {
    expect(temperatureArgs("val", undefined, false)).toEqual([]);
    expect(temperatureArgs("train", undefined, false)).toEqual([]);
  });

  it("passes a temperature >= 0 on as the child's flag of the same name", () => {
    expect(temperatureArgs("val", "0", false)).toEqual(["--val-temperature", "0"]);
    expect(temperatureArgs("val", "0.5", false)).toEqual(["--val-temperature", "0.5"]);
    expect(temperatureArgs("train", "0.7", false)).toEqual(["--train-temperature", "0.7"]);
  });

  it("refuses a negative or non-numeric value, naming the flag", () => {
    expect(() => temperatureArgs("val", "-1", false)).toThrow(
      new CliError("--val-temperature -1: expected a number >= 0"),
    );
    expect(() => temperatureArgs("val", "cold", false)).toThrow("--val-temperature cold");
    expect(() => temperatureArgs("val", "", false)).toThrow("--val-temperature");
    expect(() => temperatureArgs("train", "hot", false)).toThrow("--train-temperature hot: expected a number >= 0");
  });

  it("refuses the flag with a running gateway, which this command does not configure", () => {
    expect(() => temperatureArgs("val", "0", true)).toThrow("--val-temperature with --gateway-url");
    expect(() => temperatureArgs("train", "0.7", true)).toThrow(
      "--train-temperature with --gateway-url: set train_temperature",
    );
  });
});
