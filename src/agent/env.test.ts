import { describe, expect, it } from "vitest";
import { fromEnv, NotInRollout, tracesUrlOf } from "./env.js";

const FULL = {
  AGL_OPENAI_BASE_URL: "http://gw/proxy/rollout/r1/attempt/0/mode/train/openai/v1",
  AGL_EVENT_URL: "http://gw/api/rollouts/r1/attempt/0/events",
  AGL_KEY: "k",
  AGL_ROLLOUT_ID: "r1",
  AGL_ATTEMPT_ID: "0",
};

describe("fromEnv", () => {
  it("reads the rollout context from AGL_* variables", () => {
    expect(fromEnv(FULL)).toEqual({
      baseURL: FULL.AGL_OPENAI_BASE_URL,
      apiKey: "k",
      rolloutId: "r1",
      attemptId: "0",
      eventUrl: FULL.AGL_EVENT_URL,
    });
  });

  it("accepts a missing AGL_KEY (open gateway) as an empty key", () => {
    const { AGL_KEY: _key, ...noKey } = FULL;
    expect(fromEnv(noKey).apiKey).toBe("");
  });

  it("explains that the code runs outside a rollout, naming every missing variable", () => {
    const err = (() => {
      try {
        fromEnv({ AGL_ROLLOUT_ID: "r1", AGL_ATTEMPT_ID: "" });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(NotInRollout);
    expect((err as NotInRollout).missing).toEqual(["AGL_OPENAI_BASE_URL", "AGL_EVENT_URL", "AGL_ATTEMPT_ID"]);
    expect((err as Error).message).toMatch(/^not running inside an arclight rollout: AGL_OPENAI_BASE_URL, /);
  });
});

describe("tracesUrlOf", () => {
  const base = {
    AGL_OPENAI_BASE_URL: "http://g:1/prefix/proxy/rollout/r/attempt/0/mode/train/openai/v1",
    AGL_EVENT_URL: "http://g:1/prefix/api/rollouts/r/attempt/0/events",
    AGL_ROLLOUT_ID: "r",
    AGL_ATTEMPT_ID: "0",
  };

  it("is OTEL_EXPORTER_OTLP_TRACES_ENDPOINT when set", () => {
    expect(tracesUrlOf(fromEnv({ ...base, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://otel:4318/v1/traces" }))).toBe(
      "http://otel:4318/v1/traces",
    );
  });

  it("is the gateway's /v1/traces beside the event URL otherwise", () => {
    expect(tracesUrlOf(fromEnv(base))).toBe("http://g:1/prefix/v1/traces");
  });
});
