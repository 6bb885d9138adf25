/**
 * @module The Job of one attempt: the rendered template plus the fields the controller forces (name, namespace,
 * labels, retries off, deadline, TTL, `restartPolicy: Never`, the agent environment with the key from a Secret).
 */
import type { Rollout } from "../../protocol/index.js";
import { type AgentGateway, buildAgentEnv } from "../agent-env.js";
import { jobNameFor, labelValueFor } from "./job-name.js";
import { type JobObject, JobTemplateError, renderJobTemplate } from "./job-template.js";

/** Label every arclight Job carries; the controller watches and lists Jobs by it. */
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
/** Value of {@link MANAGED_BY_LABEL}. */
export const MANAGED_BY = "arclight";
/** `app.kubernetes.io/managed-by=arclight`, the selector of the Jobs this controller owns. */
export const MANAGED_BY_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;
/** Label (a label-safe form of the id) and annotation (the exact id) naming the rollout. */
export const ROLLOUT_ID_KEY = "arclight/rollout-id";
/** Label and annotation naming the attempt. */
export const ATTEMPT_ID_KEY = "arclight/attempt-id";

/**
 * Environment variables whose value is derived from the gateway key. They are never written into a Job: each one
 * is a `secretKeyRef` into the namespace's key Secret, which holds them under their own names.
 */
export const KEY_ENV_NAMES = ["AGL_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OTEL_EXPORTER_OTLP_HEADERS"] as const;

/** What the controller forces into every Job. */
export interface JobSettings {
  namespace: string;
  /** Where agent pods reach the gateway, and the key they present. */
  gateway: AgentGateway;
  /** Name of the Secret holding {@link KEY_ENV_NAMES}. */
  keySecretName: string;
  ttlAfterFinishedSeconds: number;
  /** Env var name → rollout path, added to every container. */
  envMap: Readonly<Record<string, string>>;
  /** Also set the standard client and OpenTelemetry variables (see `agent-env.ts`). */
  standardEnv: boolean;
}

/** A container env entry, as in the Kubernetes API. */
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef: { name: string; key: string } };
}

/**
 * The values the key Secret holds: the key-derived variables an agent would get, by name.
 * @param gateway - gateway URL and key (only the key matters; the URL is needed to build the environment)
 * @param standardEnv - whether the standard client and OpenTelemetry variables are given to agents
 * @returns e.g. `{ AGL_KEY: "k", OPENAI_API_KEY: "k", ANTHROPIC_API_KEY: "k", OTEL_EXPORTER_OTLP_HEADERS: "…" }`
 */
export function keySecretData(gateway: AgentGateway, standardEnv: boolean): Record<string, string> {
  const probe = { rollout_id: "r", is_train: true } as Rollout;
  const env = buildAgentEnv(probe, "0", gateway, {}, {}, standardEnv);
  const data: Record<string, string> = {};
  for (const name of KEY_ENV_NAMES) if (env[name] !== undefined) data[name] = env[name];
  return data;
}

/** A nested plain object of `holder[key]`, created when absent. @throws {JobTemplateError} when it is not one */
function objectAt(holder: Record<string, unknown>, key: string, where: string): Record<string, unknown> {
  const value = holder[key];
  if (value === undefined || value === null) {
    const created: Record<string, unknown> = {};
    holder[key] = created;
    return created;
  }
  if (typeof value !== "object" || Array.isArray(value)) throw new JobTemplateError(`${where} must be a mapping`);
  return value as Record<string, unknown>;
}

/** Fields the API server sets; a template copied from `kubectl get -o yaml` may carry them. */
const SERVER_SET_METADATA = ["creationTimestamp", "resourceVersion", "uid", "selfLink", "managedFields", "generation"];

/**
 * Builds the Job of one attempt: renders the template, then forces name, namespace, labels and annotations,
 * `backoffLimit: 0`, `ttlSecondsAfterFinished`, `activeDeadlineSeconds` (the rollout's `timeout_seconds`, rounded
 * up), `restartPolicy: Never`, and in every container the agent environment (`agent-env.ts`), replacing entries of
 * the same name in place; key-derived variables reference the key Secret.
 * @param rollout - the rollout; its `config.k8s.job_template` is rendered
 * @param attemptId - the attempt this Job runs
 * @param settings - namespace, gateway, Secret name, TTL, env_map, standard env
 * @returns the Job manifest, ready to create
 * @throws {JobTemplateError} no template, a template that does not render one Job, a malformed Job shape
 * @throws {EnvMapError} an `env_map` path missing from the rollout
 */
export function buildJobManifest(rollout: Rollout, attemptId: string, settings: JobSettings): JobObject {
  const template = rollout.config.k8s?.job_template;
  if (template === undefined) throw new JobTemplateError("missing config.k8s.job_template");
  const name = jobNameFor(rollout.rollout_id, attemptId);
  const job = renderJobTemplate(template, { job_name: name, input: rollout.input });
  delete job.status;

  const metadata = objectAt(job, "metadata", "metadata");
  for (const field of SERVER_SET_METADATA) delete metadata[field];
  delete metadata.generateName;
  metadata.name = name;
  metadata.namespace = settings.namespace;
  const labels = objectAt(metadata, "labels", "metadata.labels");
  labels[MANAGED_BY_LABEL] = MANAGED_BY;
  labels[ROLLOUT_ID_KEY] = labelValueFor(rollout.rollout_id);
  labels[ATTEMPT_ID_KEY] = labelValueFor(attemptId);
  const annotations = objectAt(metadata, "annotations", "metadata.annotations");
  annotations[ROLLOUT_ID_KEY] = rollout.rollout_id;
  annotations[ATTEMPT_ID_KEY] = attemptId;

  const spec = objectAt(job, "spec", "spec");
  spec.backoffLimit = 0;
  spec.ttlSecondsAfterFinished = settings.ttlAfterFinishedSeconds;
  spec.activeDeadlineSeconds = Math.max(1, Math.ceil(rollout.config.timeout_seconds));
  const podSpec = objectAt(objectAt(spec, "template", "spec.template"), "spec", "spec.template.spec");
  podSpec.restartPolicy = "Never";
  const containers = podSpec.containers;
  if (!Array.isArray(containers) || containers.length === 0) {
    throw new JobTemplateError("spec.template.spec.containers must list at least one container");
  }
  const env = agentEnvEntries(rollout, attemptId, settings);
  for (const [index, container] of containers.entries()) {
    if (container === null || typeof container !== "object" || Array.isArray(container)) {
      throw new JobTemplateError(`spec.template.spec.containers[${index}] must be a mapping`);
    }
    setEnv(container as Record<string, unknown>, env, index);
  }
  return job;
}

/** The agent environment as env entries; a key-derived value becomes a `secretKeyRef`. */
function agentEnvEntries(rollout: Rollout, attemptId: string, settings: JobSettings): EnvVar[] {
  const env = buildAgentEnv(rollout, attemptId, settings.gateway, settings.envMap, {}, settings.standardEnv);
  const secret = keySecretData(settings.gateway, settings.standardEnv);
  return Object.entries(env).map(([name, value]) =>
    // An env_map entry may override a key-derived name with a value of its own: that one is not secret.
    secret[name] !== undefined && secret[name] === value
      ? { name, valueFrom: { secretKeyRef: { name: settings.keySecretName, key: name } } }
      : { name, value },
  );
}

/** Replaces same-named entries of a container's env in place, appends the others. */
function setEnv(container: Record<string, unknown>, entries: readonly EnvVar[], index: number): void {
  const current = container.env ?? [];
  if (!Array.isArray(current)) throw new JobTemplateError(`spec.template.spec.containers[${index}].env must be a list`);
  const env = current as Record<string, unknown>[];
  for (const entry of entries) {
    const at = env.findIndex((e) => e !== null && typeof e === "object" && e.name === entry.name);
    if (at >= 0) env[at] = { ...entry };
    else env.push({ ...entry });
  }
  container.env = env;
}
