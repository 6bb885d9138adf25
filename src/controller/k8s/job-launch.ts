/**
 * @module Creating one attempt's Job together with its key Secret, in the order that never starts a pod without its
 * key and never leaves the key behind for long: 1. the Secret, unowned; 2. the Job, which references it; 3. the
 * Secret's ownerReference to the Job, so the garbage collector deletes the Secret with the Job. A failed step 2
 * deletes the Secret at once; a crash between the steps leaves an unowned Secret that `secret-gc.ts` hands to its
 * Job (crash after 2) or deletes (crash before 2).
 *
 * The Job is not created first with the Secret following it: the Job controller makes the pod at once, and a pod
 * whose Secret is missing sits in `CreateContainerConfigError` until the kubelet's next retry.
 */
import type { V1Job, V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { ownerReferenceTo } from "./key-secret.js";
import { type KubeApi, KubeError } from "./kube-api.js";

/**
 * Creates the key Secret (when there is one), the Job, then makes the Job own the Secret.
 * @param api - the namespace's API
 * @param job - the Job manifest; it references `secret` by name
 * @param secret - the Job's key Secret; undefined for a gateway without a key
 * @param log - where a failed cleanup or owner patch is reported (both are healed by `secret-gc.ts`)
 * @returns the created Job
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
