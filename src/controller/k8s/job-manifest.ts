/** @module An attempt's Job: the rendered template plus the fields the controller forces. */
import type { Rollout } from "../../protocol/index.js";
import { buildAgentEnv } from "../agent-env.js";
import { jobNameFor, labelValueFor } from "./job-name.js";
import { type JobObject, JobTemplateError, renderJobTemplate } from "./job-template.js";
import { secretReferences } from "./secret-refs.js";

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

/** Annotation of a Job naming its key Secret (see `key-secret.ts`). */
export const KEY_SECRET_ANNOTATION = "arclight/key-secret";

/** What the controller forces into every Job. */
export interface JobSettings {
  namespace: string;
  /** Gateway base URL as agent pods reach it. */
  agentUrl: string;
  ttlAfterFinishedSeconds: number;
  /** Env var name → rollout path, added to every container. */
  envMap: Readonly<Record<string, string>>;
  /** Also set the standard client and OpenTelemetry variables (see `agent-env.ts`). */
  standardEnv: boolean;
  /** The shared Secret older controllers put the admin key in: a Job still referencing it is refused. */
  legacySecretName: string;
}

/** A container env entry, as in the Kubernetes API. */
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef: { name: string; key: string } };
}

/** Two different keys: a variable whose value differs between them is derived from the key. */
const PROBE_KEYS = ["arclight-probe-key-a", "arclight-probe-key-b"] as const;

/** The agent environment of one attempt for a given key. @throws {EnvMapError} */
export function jobAgentEnv(
  rollout: Rollout,
  attemptId: string,
  settings: JobSettings,
  key: string,
): Record<string, string> {
  const gateway = { url: settings.agentUrl, key };
  return buildAgentEnv(rollout, attemptId, gateway, settings.envMap, {}, settings.standardEnv);
}

/**
 * The variables derived from the agent's key (`AGL_KEY` and the standard keys/headers, unless `env_map` overrides
 * them): never written into a Job, each a `secretKeyRef` into the Job's key Secret. @throws {EnvMapError}
 */
export function keyEnvNames(rollout: Rollout, attemptId: string, settings: JobSettings): string[] {
  const [a, b] = PROBE_KEYS.map((key) => jobAgentEnv(rollout, attemptId, settings, key)) as [
    Record<string, string>,
    Record<string, string>,
  ];
  return Object.keys(a).filter((name) => a[name] !== b[name]);
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
 * Renders the template and forces name, namespace, labels, `backoffLimit: 0`, TTL, `activeDeadlineSeconds`,
 * `restartPolicy: Never` and the agent environment; `keySecretName` null for a gateway without a key.
 * @throws {JobTemplateError} for a template that does not give one well-formed Job, or still names the legacy Secret
 * @throws {EnvMapError} an `env_map` path missing from the rollout
 */
export function buildJobManifest(
  rollout: Rollout,
  attemptId: string,
  settings: JobSettings,
  keySecretName: string | null,
): JobObject {
  const template = rollout.config.k8s?.job_template;
  if (template === undefined) throw new JobTemplateError("missing config.k8s.job_template");
  const name = jobNameFor(rollout.rollout_id, attemptId);
  const job = renderJobTemplate(template, { job_name: name, input: rollout.input });
  delete job.status;
  const metadata = objectAt(job, "metadata", "metadata");
  const annotations = forceMetadata(metadata, name, rollout.rollout_id, attemptId, settings.namespace);
  if (keySecretName !== null) annotations[KEY_SECRET_ANNOTATION] = keySecretName;
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
  const env = agentEnvEntries(rollout, attemptId, settings, keySecretName);
  for (const [index, container] of containers.entries()) {
    if (container === null || typeof container !== "object" || Array.isArray(container)) {
      throw new JobTemplateError(`spec.template.spec.containers[${index}] must be a mapping`);
    }
    setEnv(container as Record<string, unknown>, env, index);
  }
  refuseLegacySecret(podSpec, settings.legacySecretName);
  return job;
}

/** Forces name, namespace, labels and id annotations; returns the annotations. */
function forceMetadata(
  metadata: Record<string, unknown>,
  name: string,
  rolloutId: string,
  attemptId: string,
  namespace: string,
): Record<string, unknown> {
  for (const field of SERVER_SET_METADATA) delete metadata[field];
  delete metadata.generateName;
  metadata.name = name;
  metadata.namespace = namespace;
  const labels = objectAt(metadata, "labels", "metadata.labels");
  labels[MANAGED_BY_LABEL] = MANAGED_BY;
  labels[ROLLOUT_ID_KEY] = labelValueFor(rolloutId);
  labels[ATTEMPT_ID_KEY] = labelValueFor(attemptId);
  const annotations = objectAt(metadata, "annotations", "metadata.annotations");
  annotations[ROLLOUT_ID_KEY] = rolloutId;
  annotations[ATTEMPT_ID_KEY] = attemptId;
  return annotations;
}

/**
 * Refuses a reference left to the shared Secret older controllers filled with the admin key: it would give the pod a
 * missing Secret, or the admin key. @throws {JobTemplateError} naming the reference
 */
function refuseLegacySecret(podSpec: Record<string, unknown>, legacySecretName: string): void {
  const where = secretReferences(podSpec).find((ref) => ref.name === legacySecretName)?.where;
  if (where === undefined) return;
  throw new JobTemplateError(
    `${where} references Secret ${legacySecretName}, which held the gateway's admin key and is no longer created: ` +
      "agents get AGL_KEY, OPENAI_API_KEY and the like from their Job's own Secret (a per-attempt token); " +
      "remove the reference (docs/kubernetes.md, Migrating)",
  );
}

/** The agent environment as env entries; a key-derived value becomes a `secretKeyRef` into the key Secret. */
function agentEnvEntries(
  rollout: Rollout,
  attemptId: string,
  settings: JobSettings,
  keySecretName: string | null,
): EnvVar[] {
  // With a Secret the real key is minted at creation; the probe key only fills the names that come from it.
  const env = jobAgentEnv(rollout, attemptId, settings, keySecretName === null ? "" : PROBE_KEYS[0]);
  if (keySecretName === null) return Object.entries(env).map(([name, value]) => ({ name, value }));
  const fromKey = new Set(keyEnvNames(rollout, attemptId, settings));
  return Object.entries(env).map(([name, value]) =>
    fromKey.has(name) ? { name, valueFrom: { secretKeyRef: { name: keySecretName, key: name } } } : { name, value },
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
