/** @module The controller's Kubernetes API calls, every failure a {@link KubeError} saying what to do. */
import {
  BatchV1Api,
  CoreV1Api,
  type KubeConfig,
  type V1Job,
  type V1OwnerReference,
  type V1Pod,
  type V1Secret,
  Watch,
} from "@kubernetes/client-node";

/**
 * What a failure means: `conflict` 409; `invalid` 400/422 (fail the rollout); `forbidden` 401/403 (RBAC, retry
 * later); `not-found` 404; `gone` 410 (re-list); `transient` 429, 5xx, timeouts (retry with backoff).
 */
export type KubeErrorKind = "conflict" | "invalid" | "forbidden" | "not-found" | "gone" | "transient";

/** A failed Kubernetes API call, classified. The message is the API server's own (a Status `message`). */
export class KubeError extends Error {
  constructor(
    readonly kind: KubeErrorKind,
    /** HTTP status; 0 when no answer came. */
    readonly status: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "KubeError";
  }
}

function kindOf(status: number): KubeErrorKind {
  if (status === 409) return "conflict";
  if (status === 400 || status === 422) return "invalid";
  if (status === 401 || status === 403) return "forbidden";
  if (status === 404) return "not-found";
  if (status === 410) return "gone";
  return "transient";
}

/** The `message` of a Kubernetes Status body (a string of JSON or an object), else the body itself. */
function statusMessage(body: unknown): string | undefined {
  let value = body;
  if (typeof body === "string") {
    try {
      value = JSON.parse(body);
    } catch {
      return body.trim() === "" ? undefined : body.trim();
    }
  }
  if (value !== null && typeof value === "object" && typeof (value as { message?: unknown }).message === "string") {
    return (value as { message: string }).message;
  }
  return undefined;
}

/** Classifies what a client-node call threw into a KubeError naming the call `what`. */
export function toKubeError(err: unknown, what: string): KubeError {
  if (err instanceof KubeError) return err;
  const e = err as { code?: unknown; statusCode?: unknown; body?: unknown; message?: unknown };
  const status = typeof e.code === "number" ? e.code : typeof e.statusCode === "number" ? e.statusCode : 0;
  if (status === 0) {
    const reason = err instanceof Error ? err.message : String(err);
    return new KubeError("transient", 0, `${what}: API server unreachable: ${reason}`, { cause: err });
  }
  const message = statusMessage(e.body) ?? `HTTP ${status}`;
  return new KubeError(kindOf(status), status, `${what}: ${message}`, { cause: err });
}

/** A page of Jobs and the list's resourceVersion (where a watch resumes). */
export interface JobList {
  items: V1Job[];
  resourceVersion: string;
}

/** The last lines a failed attempt's pod printed, and where they came from. */
export interface PodLogTail {
  podName: string;
  container: string;
  text: string;
  /** `pod-log`: read through the API server from the kubelet; `termination-message`: the container's terminated
   * state `message` (the kubelet's `FallbackToLogsOnError` copy, or what the agent wrote to its termination log). */
  source: "pod-log" | "termination-message";
  exitCode: number | null;
}

/** Watch event types the API server sends. */
export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";

/** Jobs, Pod logs and key Secrets in one namespace. */
export class KubeApi {
  private readonly batch: BatchV1Api;
  private readonly core: CoreV1Api;
  private readonly watcher: Watch;

  /** `requestTimeoutMs` bounds each call, not watches. */
  constructor(
    config: KubeConfig,
    readonly namespace: string,
    private readonly requestTimeoutMs = 30_000,
  ) {
    this.batch = config.makeApiClient(BatchV1Api);
    this.core = config.makeApiClient(CoreV1Api);
    this.watcher = new Watch(config);
  }

  private async call<T>(what: string, request: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new KubeError("transient", 0, `${what}: no answer in ${this.requestTimeoutMs} ms`)),
        this.requestTimeoutMs,
      );
    });
    try {
      return await Promise.race([request(), timeout]);
    } catch (err) {
      throw toKubeError(err, what);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Every Job matching `labelSelector`, 500 a page. @throws {KubeError} */
  async listJobs(labelSelector: string): Promise<JobList> {
    const items: V1Job[] = [];
    let next: string | undefined;
    let resourceVersion = "";
    do {
      const page = await this.call("list Jobs", () =>
        this.batch.listNamespacedJob({ namespace: this.namespace, labelSelector, limit: 500, _continue: next }),
      );
      items.push(...page.items);
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
      next = page.metadata?._continue || undefined;
    } while (next !== undefined);
    return { items, resourceVersion };
  }

  /** Watches Jobs from `resourceVersion` (bookmarks on); `onDone` once with null or the error. */
  watchJobs(
    labelSelector: string,
    resourceVersion: string,
    onEvent: (type: WatchEventType, object: Record<string, unknown>) => void,
    onDone: (err: KubeError | null) => void,
  ): Promise<AbortController> {
    const path = `/apis/batch/v1/namespaces/${encodeURIComponent(this.namespace)}/jobs`;
    const params = { labelSelector, resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 300 };
    return this.watcher.watch(
      path,
      params,
      (type, object) => onEvent(type as WatchEventType, object as Record<string, unknown>),
      (err: unknown) => onDone(err === null || err === undefined ? null : toKubeError(err, "watch Jobs")),
    );
  }

  /** Creates a Job. @throws {KubeError} `conflict` when it exists, `invalid` for a refused spec, … */
  createJob(job: V1Job): Promise<V1Job> {
    const name = job.metadata?.name ?? "?";
    return this.call(`create Job ${name}`, () =>
      this.batch.createNamespacedJob({ namespace: this.namespace, body: job }),
    );
  }

  /** @returns the Job, or undefined when there is none @throws {KubeError} any other failure */
  async getJob(name: string): Promise<V1Job | undefined> {
    try {
      return await this.call(`read Job ${name}`, () =>
        this.batch.readNamespacedJob({ name, namespace: this.namespace }),
      );
    } catch (err) {
      if (err instanceof KubeError && err.kind === "not-found") return undefined;
      throw err;
    }
  }

  /** Deletes a Job, Pods first (foreground); already gone is fine. @throws {KubeError} */
  async deleteJob(name: string): Promise<void> {
    try {
      await this.call(`delete Job ${name}`, () =>
        this.batch.deleteNamespacedJob({ name, namespace: this.namespace, propagationPolicy: "Foreground" }),
      );
    } catch (err) {
      if (err instanceof KubeError && err.kind === "not-found") return;
      throw err;
    }
  }

  /** @throws {KubeError} (`forbidden` without `create` on secrets, `conflict` when the name is taken) */
  async createSecret(secret: V1Secret): Promise<V1Secret> {
    const name = secret.metadata?.name ?? "?";
    return this.call(`create Secret ${name}`, () =>
      this.core.createNamespacedSecret({ namespace: this.namespace, body: secret }),
    );
  }

  /** Every Secret matching `labelSelector`, 500 a page. @throws {KubeError} */
  async listSecrets(labelSelector: string): Promise<V1Secret[]> {
    const items: V1Secret[] = [];
    let next: string | undefined;
    do {
      const page = await this.call("list Secrets", () =>
        this.core.listNamespacedSecret({ namespace: this.namespace, labelSelector, limit: 500, _continue: next }),
      );
      items.push(...page.items);
      next = page.metadata?._continue || undefined;
    } while (next !== undefined);
    return items;
  }

  /** Sets a Secret's ownerReferences (JSON Patch). @throws {KubeError} (`not-found` when it is gone) */
  async setSecretOwner(name: string, owner: V1OwnerReference): Promise<void> {
    const body = [{ op: "add", path: "/metadata/ownerReferences", value: [owner] }];
    await this.call(`set owner of Secret ${name}`, () =>
      this.core.patchNamespacedSecret({ name, namespace: this.namespace, body }),
    );
  }

  /** Deletes a Secret; already gone is fine. @throws {KubeError} */
  async deleteSecret(name: string): Promise<void> {
    try {
      await this.call(`delete Secret ${name}`, () =>
        this.core.deleteNamespacedSecret({ name, namespace: this.namespace }),
      );
    } catch (err) {
      if (err instanceof KubeError && err.kind === "not-found") return;
      throw err;
    }
  }

  /**
   * The last lines of a Job's newest Pod, else its terminated-state message when the kubelet is unreachable;
   * undefined without a Pod. @throws {KubeError} when Pods cannot be listed
   */
  async podLogTail(jobName: string, lines: number): Promise<PodLogTail | undefined> {
    const pods = await this.call(`list Pods of Job ${jobName}`, () =>
      this.core.listNamespacedPod({ namespace: this.namespace, labelSelector: `job-name=${jobName}` }),
    );
    const pod = newest(pods.items);
    const podName = pod?.metadata?.name;
    const container = pod?.spec?.containers[0]?.name;
    if (pod === undefined || podName === undefined || container === undefined) return undefined;
    const terminated = pod.status?.containerStatuses?.find((s) => s.name === container)?.state?.terminated;
    const exitCode = terminated?.exitCode ?? null;
    try {
      const text = await this.call(`read log of Pod ${podName}`, () =>
        this.core.readNamespacedPodLog({ name: podName, namespace: this.namespace, container, tailLines: lines }),
      );
      return { podName, container, text, source: "pod-log", exitCode };
    } catch (err) {
      if (!(err instanceof KubeError) || terminated?.message === undefined) throw err;
      const text = terminated.message.split("\n").slice(-lines).join("\n");
      return { podName, container, text, source: "termination-message", exitCode };
    }
  }
}

function newest(pods: V1Pod[]): V1Pod | undefined {
  const time = (p: V1Pod) => new Date(p.metadata?.creationTimestamp ?? 0).getTime();
  return [...pods].sort((a, b) => time(b) - time(a))[0];
}
