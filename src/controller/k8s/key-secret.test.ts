import { describe, expect, it } from "vitest";
import { verifyAgentToken } from "../../protocol/agent-token.js";
import { type Rollout, RolloutSchema } from "../../protocol/index.js";
import { agentKeyFor } from "../agent-credentials.js";
import { buildJobManifest, type JobSettings } from "./job-manifest.js";
import { isOwned, keySecretFor, keySecretNameFor, ownerReferenceTo } from "./key-secret.js";
import { TEST_TEMPLATE } from "./testing/harness.js";

const SETTINGS: JobSettings = {
  namespace: "agents",
  agentUrl: "http://arclight-gateway.arclight.svc:8080",
  ttlAfterFinishedSeconds: 600,
  envMap: {},
  standardEnv: true,
  legacySecretName: "arclight-agent-key",
};

function rollout(id = "r1"): Rollout {
  return RolloutSchema.parse({
    rollout_id: id,
    input: { question: "2+2?" },
    is_train: false,
    config: { timeout_seconds: 60, k8s: { job_template: TEST_TEMPLATE } },
    metadata: {},
    status: { state: "queuing", last_attempt_id: "0", version: 1, created_at: 1, updated_at: 1 },
  });
}

describe("key Secret of a Job", () => {
  it("is named after its Job with a fresh random suffix each time", () => {
    const names = new Set(Array.from({ length: 50 }, () => keySecretNameFor("arclight-rollout-r1")));
    expect(names.size).toBe(50);
    for (const name of names) expect(name).toMatch(/^arclight-rollout-r1-key-[a-z0-9]{6}$/);
  });

  it("holds the attempt's token under exactly the names the Job's env references, and never the admin key", () => {
    const r = rollout();
    const token = agentKeyFor("admin", r, "0", 1_000);
    const secret = keySecretFor("arclight-rollout-r1-key-abcdef", r, "0", SETTINGS, token);
    expect(secret.stringData).toEqual({
      AGL_KEY: token,
      OPENAI_API_KEY: token,
      ANTHROPIC_API_KEY: token,
      OTEL_EXPORTER_OTLP_HEADERS: `Authorization=${encodeURIComponent(`Bearer ${token}`)}`,
    });
    expect(JSON.stringify(secret)).not.toContain("admin");
    expect(verifyAgentToken("admin", token, 1_000)).toEqual({
      claims: { rollout_id: "r1", attempt_id: "0", mode: "val", exp: 1_000 + 60 + 600 },
    });
    const job = buildJobManifest(r, "0", SETTINGS, "arclight-rollout-r1-key-abcdef") as unknown as {
      spec: { template: { spec: { containers: { env: { valueFrom?: { secretKeyRef: { key: string } } }[] }[] } } };
    };
    const referenced = job.spec.template.spec.containers[0]!.env.flatMap((e) => e.valueFrom?.secretKeyRef.key ?? []);
    expect(referenced.sort()).toEqual(Object.keys(secret.stringData ?? {}).sort());
  });

  it("is immutable, labelled managed-by, rollout, attempt and Job, and starts unowned", () => {
    const secret = keySecretFor("n", rollout("R:1"), "2", SETTINGS, "t");
    expect(secret.metadata?.labels).toEqual({
      "app.kubernetes.io/managed-by": "arclight",
      "arclight/rollout-id": expect.stringMatching(/^R-1-[0-9a-f]+$/),
      "arclight/attempt-id": "2",
      "arclight/job-name": expect.stringMatching(/^arclight-rollout-r-1-[0-9a-f]{10}$/),
    });
    expect(secret.metadata?.annotations).toEqual({ "arclight/rollout-id": "R:1", "arclight/attempt-id": "2" });
    expect(isOwned(secret)).toBe(false);
    expect(secret.immutable).toBe(true);
  });

  it("is handed to its Job by an ownerReference naming the Job's uid", () => {
    const owner = ownerReferenceTo({ metadata: { name: "arclight-rollout-r1", uid: "u-1" } });
    expect(owner).toEqual({ apiVersion: "batch/v1", kind: "Job", name: "arclight-rollout-r1", uid: "u-1" });
    expect(isOwned({ metadata: { ownerReferences: [owner] } })).toBe(true);
  });
});
