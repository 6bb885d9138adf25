import { describe, expect, it } from "vitest";
import { type Rollout, RolloutSchema } from "../../protocol/index.js";
import { EnvMapError } from "../agent-env.js";
import { buildJobManifest, type JobSettings, keyEnvNames } from "./job-manifest.js";
import { JobTemplateError } from "./job-template.js";

const TEMPLATE = `
apiVersion: batch/v1
kind: Job
metadata:
  name: ignored
  namespace: elsewhere
  labels: {team: rl}
  creationTimestamp: null
spec:
  backoffLimit: 6
  template:
    spec:
      restartPolicy: OnFailure
      containers:
        - name: agent
          image: python:3.11-slim
          env:
            - name: AGL_KEY
              value: inline-leak
            - name: QUESTION
              value: {{ input.question | yaml_escape }}
        - name: sidecar
          image: busybox
`;

function rollout(overrides: Partial<Rollout> = {}): Rollout {
  return RolloutSchema.parse({
    rollout_id: "r1",
    input: { question: "2+2?" },
    is_train: true,
    config: { timeout_seconds: 90.5, k8s: { job_template: TEMPLATE } },
    metadata: {},
    status: { state: "queuing", last_attempt_id: "0", version: 1, created_at: 1, updated_at: 1 },
    ...overrides,
  });
}

const SETTINGS: JobSettings = {
  namespace: "agents",
  agentUrl: "http://arclight-gateway.arclight:8080/",
  legacySecretName: "arclight-agent-key",
  ttlAfterFinishedSeconds: 600,
  envMap: {},
  standardEnv: true,
};

type Env = { name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }[];
type Container = { name: string; env: Env };
type ManifestShape = {
  metadata: { name: string; namespace: string; labels: Record<string, string>; annotations: Record<string, string> };
  spec: {
    backoffLimit: number;
    ttlSecondsAfterFinished: number;
    activeDeadlineSeconds: number;
    template: { spec: { restartPolicy: string; containers: Container[] } };
  };
};

const SECRET = "arclight-rollout-r1-key-abc123";

function build(r = rollout(), settings = SETTINGS, attemptId = "0", secret: string | null = SECRET): ManifestShape {
  return buildJobManifest(r, attemptId, settings, secret) as unknown as ManifestShape;
}

describe("buildJobManifest", () => {
  it("forces name, namespace, labels, retries off, deadline, TTL and restartPolicy over the template", () => {
    const job = build();
    expect(job.metadata.name).toBe("arclight-rollout-r1");
    expect(job.metadata.namespace).toBe("agents");
    expect(job.metadata.labels).toEqual({
      team: "rl",
      "app.kubernetes.io/managed-by": "arclight",
      "arclight/rollout-id": "r1",
      "arclight/attempt-id": "0",
    });
    expect(job.metadata.annotations).toEqual({
      "arclight/rollout-id": "r1",
      "arclight/attempt-id": "0",
      "arclight/key-secret": SECRET,
    });
    expect(job.metadata).not.toHaveProperty("creationTimestamp");
    expect(job.spec.backoffLimit).toBe(0);
    expect(job.spec.ttlSecondsAfterFinished).toBe(600);
    expect(job.spec.activeDeadlineSeconds).toBe(91);
    expect(job.spec.template.spec.restartPolicy).toBe("Never");
  });

  it("sets the AGL variables in every container, replacing same-named entries in place", () => {
    const [agent, sidecar] = build().spec.template.spec.containers as [Container, Container];
    const base = "http://arclight-gateway.arclight:8080";
    for (const container of [agent, sidecar]) {
      const byName = new Map(container.env.map((e) => [e.name, e]));
      expect(byName.get("AGL_OPENAI_BASE_URL")?.value).toBe(`${base}/proxy/rollout/r1/attempt/0/mode/train/openai/v1`);
      expect(byName.get("AGL_EVENT_URL")?.value).toBe(`${base}/api/rollouts/r1/attempt/0/events`);
      expect(byName.get("AGL_ROLLOUT_ID")?.value).toBe("r1");
    }
    expect(agent.env[0]).toEqual({
      name: "AGL_KEY",
      valueFrom: { secretKeyRef: { name: SECRET, key: "AGL_KEY" } },
    });
    expect(agent.env[1]).toEqual({ name: "QUESTION", value: "2+2?" });
  });

  it("writes no key into the Job: every key-derived variable is a secretKeyRef into the Job's own Secret", () => {
    const job = build();
    expect(JSON.stringify(job)).not.toContain("probe");
    expect(job.metadata.annotations["arclight/key-secret"]).toBe(SECRET);
    const env = (job.spec.template.spec.containers[0] as Container).env;
    const fromSecret = env.filter((e) => e.valueFrom !== undefined);
    expect(fromSecret.map((e) => e.name).sort()).toEqual([
      "AGL_KEY",
      "ANTHROPIC_API_KEY",
      "OPENAI_API_KEY",
      "OTEL_EXPORTER_OTLP_HEADERS",
    ]);
    expect(new Set(fromSecret.map((e) => e.valueFrom?.secretKeyRef.name))).toEqual(new Set([SECRET]));
    expect(fromSecret.map((e) => e.name).sort()).toEqual(keyEnvNames(rollout(), "0", SETTINGS).sort());
  });

  it("an env_map entry overriding a key-derived variable with a rollout field is written as a plain value", () => {
    const settings = { ...SETTINGS, envMap: { OPENAI_API_KEY: "input.question" } };
    const env = build(rollout(), settings).spec.template.spec.containers[0]!.env;
    expect(env.find((e) => e.name === "OPENAI_API_KEY")).toEqual({ name: "OPENAI_API_KEY", value: "2+2?" });
    expect(keyEnvNames(rollout(), "0", settings)).not.toContain("OPENAI_API_KEY");
  });

  it("for a gateway without a key (no Secret) writes the keyless values inline, as a local agent gets them", () => {
    const job = build(rollout(), SETTINGS, "0", null);
    const env = job.spec.template.spec.containers[0]!.env;
    expect(env.filter((e) => e.valueFrom !== undefined)).toEqual([]);
    expect(env.find((e) => e.name === "AGL_KEY")).toEqual({ name: "AGL_KEY", value: "" });
    expect(env.find((e) => e.name === "OPENAI_API_KEY")?.value).toBe("arclight-no-key");
    expect(job.metadata.annotations).not.toHaveProperty("arclight/key-secret");
  });

  it("a template reading AGL_KEY from the legacy shared Secret keeps working: the controller replaces that entry", () => {
    const legacy = TEMPLATE.replace(
      "value: inline-leak",
      "valueFrom: {secretKeyRef: {name: arclight-agent-key, key: AGL_KEY}}",
    );
    const job = build(rollout({ config: { ...rollout().config, k8s: { job_template: legacy } } }));
    expect(JSON.stringify(job)).not.toContain("arclight-agent-key");
  });

  it("refuses a template that reads the legacy shared Secret under another name, naming the entry", () => {
    const legacy = TEMPLATE.replace(
      "- name: QUESTION",
      "- name: MY_KEY\n              valueFrom: {secretKeyRef: {name: arclight-agent-key, key: AGL_KEY}}\n            - name: QUESTION",
    );
    const r = rollout({ config: { ...rollout().config, k8s: { job_template: legacy } } });
    expect(() => build(r)).toThrow(JobTemplateError);
    expect(() => build(r)).toThrow(
      /^spec\.template\.spec\.containers\[0\]\.env\[1\] \(MY_KEY\) references Secret arclight-agent-key, which held the gateway's admin key/,
    );
  });

  it("adds env_map fields from the rollout and names a missing path", () => {
    const env = build(rollout(), { ...SETTINGS, envMap: { Q: "input.question" } }).spec.template.spec.containers[0]!
      .env;
    expect(env.find((e) => e.name === "Q")?.value).toBe("2+2?");
    expect(() => build(rollout(), { ...SETTINGS, envMap: { Q: "input.nope" } })).toThrow(EnvMapError);
  });

  it("with standard_env off sets only the AGL variables, as AGL does (plus rollout and attempt ids)", () => {
    const env = build(rollout(), { ...SETTINGS, standardEnv: false }).spec.template.spec.containers[1]!.env;
    expect(env.map((e) => e.name)).toEqual([
      "AGL_OPENAI_BASE_URL",
      "AGL_EVENT_URL",
      "AGL_KEY",
      "AGL_ROLLOUT_ID",
      "AGL_ATTEMPT_ID",
    ]);
  });

  it("names a retry's Job after its attempt and points its URLs at that attempt", () => {
    const job = build(rollout(), SETTINGS, "1");
    expect(job.metadata.name).toMatch(/^arclight-rollout-r1-[0-9a-f]{10}$/);
    expect(job.metadata.annotations["arclight/attempt-id"]).toBe("1");
    const env = job.spec.template.spec.containers[0]!.env;
    expect(env.find((e) => e.name === "AGL_EVENT_URL")?.value).toContain("/attempt/1/events");
  });

  it("fails a rollout without a template, and a Job without containers, naming the problem", () => {
    const noTemplate = rollout({ config: { timeout_seconds: 10, max_attempts: 1, local: null, k8s: null } });
    expect(() => build(noTemplate)).toThrow(new JobTemplateError("missing config.k8s.job_template"));
    const empty = rollout({
      config: { timeout_seconds: 10, max_attempts: 1, local: null, k8s: { job_template: "kind: Job\nspec: {}\n" } },
    });
    expect(() => build(empty)).toThrow(/containers must list at least one container/);
  });
});
