/**
 * The Kubernetes controller against a real kube-apiserver + etcd + kube-controller-manager (built by
 * scripts/build-k8s.sh). There is no kubelet: the test plays it by binding Pods to a fake Node, patching Pod status
 * and serving container logs (src/controller/k8s/testing/kubelet.ts); the Job controller turns Pod phases into Job
 * conditions as on a real cluster.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { V1Job, V1Secret } from "@kubernetes/client-node";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { agentKeyFor } from "../src/controller/agent-credentials.js";
import { buildJobManifest, type JobSettings, MANAGED_BY_SELECTOR } from "../src/controller/k8s/job-manifest.js";
import { JobWatcher } from "../src/controller/k8s/job-watch.js";
import { keySecretFor } from "../src/controller/k8s/key-secret.js";
import { type K8sHarness, startK8sHarness } from "../src/controller/k8s/testing/harness.js";
import {
  type KubeCluster,
  kubeBinaries,
  skipWithoutKube,
  startKubeCluster,
} from "../src/controller/k8s/testing/kube-cluster.js";
import {
  bindPod,
  type FakeKubelet,
  finishPod,
  podsOfJob,
  startFakeKubelet,
  waitForPod,
} from "../src/controller/k8s/testing/kubelet.js";
import { runProcess } from "../src/testing/run-process.js";

const TSX_LOADER = createRequire(import.meta.url).resolve("tsx");
const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));

let cluster: KubeCluster;
let kubelet: FakeKubelet;
let namespaces = 0;
const harnesses: K8sHarness[] = [];

async function harness(): Promise<K8sHarness> {
  const h = await startK8sHarness(cluster, `t${process.pid}-${namespaces++}`);
  harnesses.push(h);
  return h;
}

afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
});

describe.skipIf(skipWithoutKube())("k8s controller on a real API server", { timeout: 180_000 }, () => {
  beforeAll(async () => {
    cluster = await startKubeCluster();
    kubelet = await startFakeKubelet(cluster);
  }, 240_000);
  afterAll(async () => {
    await kubelet?.stop();
    await cluster?.stop();
  });

  it("creates one Job with the forced fields and its key in the Job's own Secret, and a completed Job makes the rollout succeed", async () => {
    const h = await harness();
    h.controller();
    await h.create([{ rollout_id: "ok-1" }]);
    const running = await h.waitState("ok-1", "running");
    expect(running.status.k8s_job_name).toBe("arclight-rollout-ok-1");
    const job = (await h.api.getJob("arclight-rollout-ok-1"))!;
    expect(job.spec?.backoffLimit).toBe(0);
    expect(job.spec?.ttlSecondsAfterFinished).toBe(600);
    expect(job.spec?.activeDeadlineSeconds).toBe(600);
    expect(job.spec?.template.spec?.restartPolicy).toBe("Never");
    expect(job.metadata?.labels?.["app.kubernetes.io/managed-by"]).toBe("arclight");
    const secretName = job.metadata?.annotations?.["arclight/key-secret"];
    expect(secretName).toMatch(/^arclight-rollout-ok-1-key-[a-z0-9]{6}$/);
    const env = job.spec?.template.spec?.containers[0]?.env ?? [];
    expect(env.find((e) => e.name === "AGL_KEY")?.valueFrom?.secretKeyRef).toEqual({
      name: secretName,
      key: "AGL_KEY",
    });
    expect(JSON.stringify(job)).not.toContain("k8s-test-key");

    const pod = await waitForPod(cluster, h.namespace, "arclight-rollout-ok-1");
    await finishPod(cluster, pod, { exitCode: 0 });
    const done = await h.waitState("ok-1", "succeeded");
    expect(done.status.error_message).toBeNull();
    expect((await h.jobs()).length).toBe(1);
  });

  it("the Job's Secret is owned by the Job and holds an agent token that the gateway takes for that attempt and refuses (403) for another rollout; no Secret holds the admin key", async () => {
    const h = await harness();
    h.controller();
    await h.create([{ rollout_id: "tok-1" }, { rollout_id: "tok-2", config: { k8s: { job_template: "kind: Pod" } } }]);
    await h.waitState("tok-1", "running");
    const job = (await h.api.getJob("arclight-rollout-tok-1"))!;
    const secret = await h.waitFor("the Secret owned by its Job", async () => {
      const found = (await h.api.listSecrets("")).find(
        (s) => s.metadata?.labels?.["arclight/job-name"] === job.metadata?.name,
      );
      return found?.metadata?.ownerReferences?.length ? found : undefined;
    });
    expect(secret.metadata?.name).toBe(job.metadata?.annotations?.["arclight/key-secret"]);
    expect(secret.metadata?.ownerReferences).toEqual([
      { apiVersion: "batch/v1", kind: "Job", name: "arclight-rollout-tok-1", uid: job.metadata?.uid },
    ]);
    expect(secret.immutable).toBe(true);
    const data = decoded(secret);
    expect(Object.keys(data).sort()).toEqual([
      "AGL_KEY",
      "ANTHROPIC_API_KEY",
      "OPENAI_API_KEY",
      "OTEL_EXPORTER_OTLP_HEADERS",
    ]);
    const token = data.AGL_KEY!;
    expect(token).toMatch(/^aglt1\./);
    expect(data.OPENAI_API_KEY).toBe(token);
    expect(data.OTEL_EXPORTER_OTLP_HEADERS).toBe(`Authorization=${encodeURIComponent(`Bearer ${token}`)}`);

    const as = (path: string) =>
      h.gateway.call("POST", path, { event_type: "reward", data: { value: 1 } }, { authorization: `Bearer ${token}` });
    expect((await as("/api/rollouts/tok-1/attempt/0/events")).status).toBe(200);
    const other = await as("/api/rollouts/tok-2/attempt/0/events");
    expect(other.status).toBe(403);
    expect(((await other.json()) as { detail: string }).detail).toEqual(expect.any(String));

    for (const s of await h.api.listSecrets("")) {
      for (const value of Object.values(decoded(s))) expect(value).not.toContain("k8s-test-key");
    }
  });

  it("deleting a Job deletes its key Secret (kube-controller-manager's garbage collector follows the ownerReference)", async () => {
    const h = await harness();
    h.controller();
    await h.create([{ rollout_id: "gc-1" }]);
    await h.waitState("gc-1", "running");
    const job = (await h.api.getJob("arclight-rollout-gc-1"))!;
    const secretName = job.metadata!.annotations!["arclight/key-secret"]!;
    await h.waitFor("the Secret owned", async () =>
      (await secretNamed(h, secretName))?.metadata?.ownerReferences?.length ? true : undefined,
    );
    await h.api.deleteJob("arclight-rollout-gc-1");
    await h.waitFor("the Secret deleted with its Job", async () =>
      (await secretNamed(h, secretName)) === undefined ? true : undefined,
    );
    // Foreground deletion: the Secret and the Pod go first, then the Job itself.
    await h.waitFor("the Job deleted", async () =>
      (await h.api.getJob("arclight-rollout-gc-1")) === undefined ? true : undefined,
    );
  });

  it("a crash between creating the Secret and the Job leaves an unowned Secret: deleted after orphan_grace_seconds, while the rollout gets a new Secret and its Job", async () => {
    const h = await harness();
    const [rollout] = await h.create([{ rollout_id: "crash-1" }]);
    // What a controller killed after step 1 of job-launch.ts leaves behind.
    const leftover = keySecretFor(
      "arclight-rollout-crash-1-key-zzzzzz",
      rollout!,
      "0",
      { ...JOB_SETTINGS, namespace: h.namespace },
      "t",
    );
    await h.api.createSecret(leftover);
    h.controller({ orphan_grace_seconds: 1 });
    await h.waitState("crash-1", "running");
    await h.waitFor("the leftover deleted", async () =>
      (await secretNamed(h, "arclight-rollout-crash-1-key-zzzzzz")) === undefined ? true : undefined,
    );
    expect(
      h.logs.some(
        (l) => l.msg === "deleting orphan key Secret" && l.secretName === "arclight-rollout-crash-1-key-zzzzzz",
      ),
    ).toBe(true);
    const job = (await h.api.getJob("arclight-rollout-crash-1"))!;
    const own = await secretNamed(h, job.metadata!.annotations!["arclight/key-secret"]!);
    expect(own?.metadata?.ownerReferences?.[0]?.uid).toBe(job.metadata?.uid);
  });

  it("the shared admin-key Secret of an older controller is deleted once no Job references it", async () => {
    const h = await harness();
    const legacy = "arclight-agent-key";
    await h.api.createSecret({
      metadata: { name: legacy, labels: { "app.kubernetes.io/managed-by": "arclight" } },
      stringData: { AGL_KEY: "k8s-test-key" },
    });
    // A Job the older controller created for a rollout it had not yet patched running: it reads AGL_KEY from there.
    const [old] = await h.create([{ rollout_id: "old-1" }]);
    const settings = { ...JOB_SETTINGS, namespace: h.namespace };
    const manifest = JSON.stringify(buildJobManifest(old!, "0", settings, "per-job-secret"));
    const oldStyle = JSON.parse(manifest.replaceAll('"per-job-secret"', `"${legacy}"`)) as V1Job;
    delete oldStyle.metadata?.annotations?.["arclight/key-secret"];
    await h.api.createJob(oldStyle);
    h.controller({ orphan_grace_seconds: 1 });
    await h.waitState("old-1", "running");
    await h.waitFor("a sweep that saw the reference", () =>
      h.logs.find((l) => l.msg === "legacy admin-key Secret still referenced by Jobs"),
    );
    expect(await secretNamed(h, legacy)).toBeDefined();
    await h.api.deleteJob("arclight-rollout-old-1");
    await h.waitFor("the legacy Secret deleted", async () =>
      (await secretNamed(h, legacy)) === undefined ? true : undefined,
    );
  });

  it("a failed pod fails the rollout with the Job's reason, stores the pod's last log lines (served by the kubelet) as a log event, and deletes the Job", async () => {
    const h = await harness();
    h.controller({ pod_log_lines: 3 });
    await h.create([{ rollout_id: "bad-1" }]);
    const pod = await waitForPod(cluster, h.namespace, "arclight-rollout-bad-1");
    await bindPod(cluster, pod, kubelet.nodeName);
    kubelet.logs.set(`${h.namespace}/${pod.metadata.name}/agent`, "line 1\nline 2\nTraceback: boom\nValueError: 3\n");
    await finishPod(cluster, pod, { exitCode: 3 });
    const failed = await h.waitState("bad-1", "failed");
    expect(failed.status.error_message).toMatch(/^Job failed: BackoffLimitExceeded/);
    const [log] = await h.client.getEvents("bad-1", { eventType: "log" });
    expect(log?.data).toMatchObject({
      source: "k8s",
      job_name: "arclight-rollout-bad-1",
      pod_name: pod.metadata.name,
      exit_code: 3,
      log_source: "pod-log",
      text: "line 2\nTraceback: boom\nValueError: 3\n",
    });
    await h.waitFor("failed Job deleted", async () => ((await h.jobs()).length === 0 ? true : undefined));
  });

  it("without a kubelet to read logs from, the container's termination message becomes the log event", async () => {
    const h = await harness();
    h.controller();
    await h.create([{ rollout_id: "nolog-1" }]);
    const pod = await waitForPod(cluster, h.namespace, "arclight-rollout-nolog-1");
    await finishPod(cluster, pod, { exitCode: 1, message: "agent crashed: no answer" });
    await h.waitState("nolog-1", "failed");
    const [log] = await h.client.getEvents("nolog-1", { eventType: "log" });
    expect(log?.data).toMatchObject({
      log_source: "termination-message",
      text: "agent crashed: no answer",
      exit_code: 1,
    });
  });

  it("a Job running past timeout_seconds fails with DeadlineExceeded", async () => {
    const h = await harness();
    h.controller();
    await h.create([{ rollout_id: "slow-1", config: { timeout_seconds: 2 } }]);
    const failed = await h.waitState("slow-1", "failed", 90_000);
    expect(failed.status.error_message).toMatch(/^Job failed: DeadlineExceeded/);
  });

  it("a template that is not one Job, and a spec the API server refuses (422), fail the rollout naming the problem", async () => {
    const h = await harness();
    h.controller();
    const refused = TEMPLATE_WITH_BAD_CONTAINER_NAME;
    await h.create([
      { rollout_id: "pod-1", config: { k8s: { job_template: "apiVersion: v1\nkind: Pod\n" } } },
      { rollout_id: "invalid-1", config: { k8s: { job_template: refused } } },
    ]);
    const notJob = await h.waitState("pod-1", "failed");
    expect(notJob.status.error_message).toBe("Invalid Job spec: job template must render a Kubernetes Job");
    const invalid = await h.waitState("invalid-1", "failed");
    expect(invalid.status.error_message).toMatch(
      /^Invalid Job spec: create Job arclight-rollout-invalid-1: .*Invalid value: "Bad_Name"/,
    );
  });

  it("deleting a running rollout in the gateway deletes its Job (foreground) and its Pod", async () => {
    const h = await harness();
    h.controller();
    await h.create([{ rollout_id: "gone-1" }]);
    await h.waitState("gone-1", "running");
    await waitForPod(cluster, h.namespace, "arclight-rollout-gone-1");
    await h.client.deleteRollout("gone-1");
    await h.waitFor("Job and Pod deleted", async () => {
      const jobs = await h.jobs();
      const pods = await podsOfJob(cluster, h.namespace, "arclight-rollout-gone-1");
      return jobs.length === 0 && pods.length === 0 ? true : undefined;
    });
  });

  it("`arclight controller --mode k8s` killed mid-run (SIGKILL) is replaced by one that adopts its Jobs (also one created but not yet patched) and creates no duplicate", async () => {
    const h = await harness();
    // The CLI, as a user runs it.
    const args = ["controller", "--mode", "k8s", "--kubeconfig", cluster.kubeconfigPath, "--namespace", h.namespace];
    args.push("--gateway-url", h.gateway.url, "--key", "k8s-test-key", "--poll-interval", "0.2", "--log-level", "warn");
    const first: ChildProcess = spawn(process.execPath, ["--import", TSX_LOADER, MAIN, ...args], { stdio: "ignore" });
    const exited = new Promise((resolve) => first.once("exit", resolve));
    await h.create([{ rollout_id: "k-1" }, { rollout_id: "k-2" }]);
    await h.waitState("k-1", "running");
    await h.waitState("k-2", "running");
    first.kill("SIGKILL");
    await exited;
    const pod1 = await waitForPod(cluster, h.namespace, "arclight-rollout-k-1");
    await finishPod(cluster, pod1, { exitCode: 0 });
    // A crash between "Job created" and "rollout patched running": the Job exists, the rollout is still queuing.
    const [k3] = await h.create([{ rollout_id: "k-3" }]);
    const k3Settings = { ...JOB_SETTINGS, namespace: h.namespace, agentUrl: h.gateway.url };
    const k3Secret = "arclight-rollout-k-3-key-crash0";
    await h.api.createSecret(keySecretFor(k3Secret, k3!, "0", k3Settings, agentKeyFor("k8s-test-key", k3!, "0")));
    await h.api.createJob(buildJobManifest(k3!, "0", k3Settings, k3Secret) as V1Job);
    const second = h.controller();
    await h.waitState("k-1", "succeeded");
    const k3Running = await h.waitState("k-3", "running");
    expect(k3Running.status.k8s_job_name).toBe("arclight-rollout-k-3");
    for (const id of ["k-2", "k-3"]) {
      await finishPod(cluster, await waitForPod(cluster, h.namespace, `arclight-rollout-${id}`), { exitCode: 0 });
      await h.waitState(id, "succeeded");
    }
    expect(second.jobsCreated).toBe(0);
    // The crashed controller never set the Secret's owner: the new one handed it to its Job.
    const k3Job = (await h.api.getJob("arclight-rollout-k-3"))!;
    await h.waitFor("k-3's Secret owned by its Job", async () =>
      (await secretNamed(h, k3Secret))?.metadata?.ownerReferences?.[0]?.uid === k3Job.metadata?.uid ? true : undefined,
    );
    expect((await h.jobs()).map((j) => j.metadata?.name).sort()).toEqual([
      "arclight-rollout-k-1",
      "arclight-rollout-k-2",
      "arclight-rollout-k-3",
    ]);
  });

  it("creates Jobs no faster than max_jobs_per_minute: 100 rollouts at 30/min, burst 1 (token-bucket clock 12x faster: 6 Jobs/s real)", async () => {
    const h = await harness();
    const scale = 12;
    const ratePerSecond = (30 / 60) * scale;
    const t0 = Date.now();
    const clock = () => t0 + (Date.now() - t0) * scale;
    // Creation times as seen from outside the controller, through a watch of our own.
    const seen = new Map<string, number>();
    const watcher = new JobWatcher({
      api: h.api,
      labelSelector: MANAGED_BY_SELECTOR,
      logger: pino({ level: "silent" }),
      onChange: (job) => {
        const name = job.metadata?.name ?? "";
        if (!seen.has(name)) seen.set(name, Date.now());
      },
    });
    watcher.start();
    await watcher.whenSynced();
    await h.create(Array.from({ length: 100 }, (_, i) => ({ rollout_id: `rate-${i}` })));
    const start = Date.now();
    const controller = h.controller({ max_jobs_per_minute: 30, job_burst: 1 }, { limiterClock: clock });
    await h.waitFor("100 Jobs", () => (seen.size >= 100 ? true : undefined), 180_000);
    watcher.stop();
    const times = [...seen.values()].sort((a, b) => a - b);
    const elapsedMs = times[99]! - start;
    // 1 Job at once, then one per 1/6 s: the 100th cannot come before 99/6 s.
    expect(elapsedMs).toBeGreaterThanOrEqual((99 / ratePerSecond) * 1000 * 0.97);
    // Never ahead of the bucket at any moment (seen times lag creation, which only loosens this bound).
    for (const [i, t] of times.entries()) {
      expect(i + 1).toBeLessThanOrEqual(1 + (ratePerSecond * (t - start)) / 1000 + 1);
    }
    // The count goes up once the Secret's owner is set too, a moment after the watch saw the Job.
    await h.waitFor("100 Jobs counted", () => (controller.jobsCreated >= 100 ? true : undefined), 10_000);
    expect(controller.jobsCreated).toBe(100);
  }, 240_000);

  it("RBAC: a ServiceAccount whose Role lacks `create jobs` gets 403; the rollout waits, the controller logs and retries, deleting the key Secret of each refused try, and with deploy/k8s's Role the rollout runs to the end", async () => {
    const h = await harness();
    const ns = h.namespace;
    const rules = deployRole().rules;
    const withoutCreate = rules.map((r) =>
      r.resources.includes("jobs") ? { ...r, verbs: r.verbs.filter((v) => v !== "create") } : r,
    );
    const rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces";
    await cluster.request("POST", `/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name: "limited" } });
    await cluster.request("POST", `${rbac}/${ns}/roles`, { metadata: { name: "controller" }, rules: withoutCreate });
    await cluster.request("POST", `${rbac}/${ns}/rolebindings`, {
      metadata: { name: "controller" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "controller" },
      subjects: [{ kind: "ServiceAccount", name: "limited", namespace: ns }],
    });
    const tokenRequest = (await cluster.request("POST", `/api/v1/namespaces/${ns}/serviceaccounts/limited/token`, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { expirationSeconds: 3600 },
    })) as { status: { token: string } };
    h.controller({}, { kubeConfig: cluster.kubeConfig(tokenRequest.status.token) });
    await h.create([{ rollout_id: "rbac-1" }]);
    const denied = await h.waitFor("a logged 403", () =>
      h.logs.find((l) => l.msg === "could not create Job; will retry" && /forbidden/.test(String(l.err))),
    );
    expect(String(denied.err)).toContain('cannot create resource "jobs"');
    expect((await h.client.getRollout("rbac-1")).rollout.status.state).toBe("queuing");
    expect(await h.jobs()).toEqual([]);
    // Each refused try created a key Secret first and deleted it at once: none piles up (the grace period is 300 s).
    await h.waitFor("no key Secret left by the refused tries", async () =>
      (await h.api.listSecrets(MANAGED_BY_SELECTOR)).length === 0 ? true : undefined,
    );
    expect(h.logs.filter((l) => l.msg === "could not create Job; will retry").length).toBeGreaterThanOrEqual(1);
    await cluster.request("PUT", `${rbac}/${ns}/roles/controller`, { metadata: { name: "controller" }, rules });
    await h.waitState("rbac-1", "running");
    const pod = await waitForPod(cluster, ns, "arclight-rollout-rbac-1");
    await finishPod(cluster, pod, { exitCode: 2, message: "boom" });
    const failed = await h.waitState("rbac-1", "failed");
    expect(failed.status.error_message).toMatch(/BackoffLimitExceeded/);
    const [log] = await h.client.getEvents("rbac-1", { eventType: "log" });
    expect(log?.data).toMatchObject({ text: "boom" });
  });

  it("a watch resumed from an expired resourceVersion gets 410 Gone, lists again, and finished Jobs are still reported", async () => {
    const h = await harness();
    const controller = h.controller({ poll_interval_seconds: 3600 });
    await h.create([{ rollout_id: "w-1" }]);
    await controller.jobWatcher.whenSynced();
    await controller.reconcileOnce();
    await h.waitState("w-1", "running");
    const watcher = controller.jobWatcher;
    const listsBefore = watcher.lists;
    // etcd is compacted every 10 s (kube-cluster.ts): resourceVersion 1 is gone once the first compaction ran, and
    // the API server answers 410 Gone. Resume from it until that happens.
    await h.waitFor("410 and a new list", async () => {
      if (watcher.expired >= 1 && watcher.lists > listsBefore) return true;
      watcher.resumeFrom("1");
      await new Promise((r) => setTimeout(r, 500));
      return undefined;
    });
    const pod = await waitForPod(cluster, h.namespace, "arclight-rollout-w-1");
    await finishPod(cluster, pod, { exitCode: 0 });
    // The pass runs hourly here: only the resumed watch can report this one.
    await h.waitState("w-1", "succeeded");
  });

  it("kubectl apply --dry-run=server accepts deploy/k8s, and the example agent template renders to a Job the API server accepts", async () => {
    await cluster.request("POST", "/api/v1/namespaces", { metadata: { name: "arclight" } }).catch(() => {});
    const result = await runProcess(
      [kubeBinaries()!.kubectl, "--kubeconfig", cluster.kubeconfigPath, "apply", "--dry-run=server", "-f", DEPLOY_DIR],
      // HOME in the cluster's dir: kubectl keeps its discovery cache under $HOME/.kube.
      { cwd: DEPLOY_DIR, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cluster.dir } },
    );
    // The one warning allowed: the namespace was created by the test, not by `kubectl apply`.
    expect(result.stderr.replace(/^Warning: resource namespaces\/arclight is missing .*\n/, "")).toBe("");
    expect(result.code).toBe(0);
    for (const object of [
      "persistentvolumeclaim/arclight-gateway-data",
      "deployment.apps/arclight-gateway",
      "service/arclight-gateway",
      "serviceaccount/arclight-controller",
      "role.rbac.authorization.k8s.io/arclight-controller",
      "rolebinding.rbac.authorization.k8s.io/arclight-controller",
      "deployment.apps/arclight-controller",
    ]) {
      expect(result.stdout).toContain(`${object} created (server dry run)`);
    }
    const template = readFileSync(`${DEPLOY_DIR}/agent-job.yaml.j2`, "utf8");
    const [rollout] = await (await harness()).create([
      {
        rollout_id: "example-1",
        input: { question: "What is 2+3?", answer: "5" },
        config: { k8s: { job_template: template } },
      },
    ]);
    const job = buildJobManifest(
      rollout!,
      "0",
      { ...JOB_SETTINGS, namespace: "arclight" },
      "arclight-rollout-x-key-abcdef",
    );
    const accepted = (await cluster.request(
      "POST",
      "/apis/batch/v1/namespaces/arclight/jobs?dryRun=All",
      job,
    )) as V1Job;
    expect(accepted.spec?.template.spec?.containers[0]?.image).toBe("python:3.11-slim");
  });
});

const DEPLOY_DIR = fileURLToPath(new URL("../deploy/k8s", import.meta.url));

/** Settings of Jobs built by hand in these tests. */
const JOB_SETTINGS: JobSettings = {
  namespace: "default",
  agentUrl: "http://arclight-gateway.arclight.svc:8080",
  legacySecretName: "arclight-agent-key",
  ttlAfterFinishedSeconds: 600,
  envMap: {},
  standardEnv: true,
};

/** A Secret's values, decoded. */
function decoded(secret: V1Secret): Record<string, string> {
  const data: Record<string, string> = {};
  for (const [k, v] of Object.entries(secret.data ?? {})) data[k] = Buffer.from(v, "base64").toString();
  return data;
}

/** The Secret `name` of the harness's namespace, or undefined when there is none. */
async function secretNamed(h: K8sHarness, name: string): Promise<V1Secret | undefined> {
  return (await h.api.listSecrets("")).find((s) => s.metadata?.name === name);
}

/** The controller Role of deploy/k8s/controller.yaml. */
function deployRole(): {
  rules: { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }[];
} {
  const docs = parseAllDocuments(readFileSync(`${DEPLOY_DIR}/controller.yaml`, "utf8"));
  const role = (Array.isArray(docs) ? docs : []).map((d) => d.toJS()).find((o) => o?.kind === "Role");
  return role;
}

/** A Job whose container name is not a DNS label: the API server answers 422. */
const TEMPLATE_WITH_BAD_CONTAINER_NAME = `
apiVersion: batch/v1
kind: Job
spec:
  template:
    spec:
      containers:
        - name: Bad_Name
          image: python:3.11-slim
`;
