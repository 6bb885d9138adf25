import { describe, expect, it } from "vitest";
import { CliError } from "./cli-error.js";
import { valTemperatureArgs } from "./gateway-child-flags.js";

describe("valTemperatureArgs", () => {
  it("passes nothing to the gateway child without the flag", () => {
    expect(valTemperatureArgs(undefined, false)).toEqual([]);
  });

  it("passes a temperature >= 0 on as the child's --val-temperature", () => {
    expect(valTemperatureArgs("0", false)).toEqual(["--val-temperature", "0"]);
    expect(valTemperatureArgs("0.5", false)).toEqual(["--val-temperature", "0.5"]);
  });

  it("refuses a negative or non-numeric value, naming the flag", () => {
    expect(() => valTemperatureArgs("-1", false)).toThrow(new CliError("--val-temperature -1: expected a number >= 0"));
    expect(() => valTemperatureArgs("cold", false)).toThrow("--val-temperature cold");
    expect(() => valTemperatureArgs("", false)).toThrow("--val-temperature");
  });

  it("refuses the flag with a running gateway, which this command does not configure", () => {
    expect(() => valTemperatureArgs("0", true)).toThrow("--val-temperature with --gateway-url");
  });
});
