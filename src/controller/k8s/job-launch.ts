/**
 * @module Creates an attempt's Job with its key Secret: 1. the Secret, unowned; 2. the Job; 3. the Secret's owner set
 * to the Job. Secret first, since a pod whose Secret is missing waits for the kubelet's next retry; `secret-gc.ts`
 * heals a crash between steps.
 */
import type { V1Job, V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { ownerReferenceTo } from "./key-secret.js";
import { type KubeApi, KubeError } from "./kube-api.js";

/**
 * Creates the key Secret (if any), the Job, then makes the Job own the Secret.
 * @throws {KubeError} from creating the Secret or the Job (`conflict` on the Job: it exists; adopt it)
 */
export async function launchJob(api: KubeApi, job: V1Job, secret: V1Secret | undefined, log: Logger): Promise<V1Job> {
  const secretName = secret?.metadata?.name;
  if (secret !== undefined) await api.createSecret(secret);
  let created: V1Job;
  try {
    created = await api.createJob(job);
  } catch (err) {
    if (secretName !== undefined) await deleteQuietly(api, secretName, log);
    throw err;
  }
  if (secretName === undefined) return created;
  try {
    await api.setSecretOwner(secretName, ownerReferenceTo(created));
  } catch (err) {
    if (!(err instanceof KubeError)) throw err;
    log.warn({ secretName, err: err.message }, "could not hand the key Secret to its Job; the collector retries");
  }
  return created;
}

async function deleteQuietly(api: KubeApi, secretName: string, log: Logger): Promise<void> {
  try {
    await api.deleteSecret(secretName);
  } catch (err) {
    if (!(err instanceof KubeError)) throw err;
    log.warn(
      { secretName, err: err.message },
      "could not delete the key Secret of a Job not created; the collector retries",
    );
  }
}
