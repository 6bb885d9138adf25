import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { CliError } from "./cli-error.js";
import { type EvalFlags, probeEndpoint, samplingOf } from "./eval-flags.js";

const flags = (extra: Partial<EvalFlags>): EvalFlags => ({
  split: "val",
  samples: "1",
  logLevel: "warn",
  set: [],
  ...extra,
});

describe("samplingOf", () => {
  it("takes any finite --threshold, negative included", () => {
    expect(samplingOf(flags({ threshold: "0.9" })).threshold).toBe(0.9);
    expect(samplingOf(flags({ threshold: "-1" })).threshold).toBe(-1);
  });

  it("refuses a --threshold that is not a number, naming the flag and no bound", () => {
    expect(() => samplingOf(flags({ threshold: "abc" }))).toThrow(new CliError("--threshold abc: expected a number"));
    expect(() => samplingOf(flags({ threshold: "Infinity" }))).toThrow(
      new CliError("--threshold Infinity: expected a number"),
    );
  });

  it("refuses a negative --temperature, naming its bound", () => {
    expect(() => samplingOf(flags({ temperature: "-1" }))).toThrow(
      new CliError("--temperature -1: expected a number >= 0"),
    );
  });
});

describe("probeEndpoint", () => {
  it("passes a server that answers, whatever the status", async () => {
    const server = createServer((_req, res) => res.writeHead(401).end());
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    try {
      await expect(probeEndpoint(`http://127.0.0.1:${port}/v1/`)).resolves.toBeUndefined();
    } finally {
      server.close();
    }
  });

  it("refuses a URL where nothing listens, naming --endpoint and the cause", async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await expect(probeEndpoint(`http://127.0.0.1:${port}/v1`)).rejects.toThrow(
      new CliError(
        `--endpoint http://127.0.0.1:${port}/v1: GET http://127.0.0.1:${port}/v1/models got no HTTP answer ` +
          "(ECONNREFUSED); is the server up at that URL?",
      ),
    );
  });

  it("refuses a server that accepts but never answers, after the timeout", async () => {
    const server = createServer(() => {});
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    try {
      await expect(probeEndpoint(`http://127.0.0.1:${port}/v1`, 200)).rejects.toThrow("no answer in 200 ms");
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
