/**
 * Pods that really run: the control plane of test/k8s-controller.test.ts plus a real node (Debian's containerd and
 * runc, a kubelet and kube-scheduler 1.20.2 built by scripts/build-k8s.sh; src/controller/k8s/testing/kube-node.ts)
 * and the agent image (a debootstrap root file system from scripts/build-agent-image.sh plus this checkout's
 * sdk/python; src/controller/k8s/testing/agent-image.ts). The controller creates Jobs, the scheduler binds their pods,
 * the kubelet starts the containers, the agents talk to the gateway, and the pods' exits reach the rollouts. The
 * Kubernetes sandbox backend (sdk/python/arclight_agent/sandbox/kubernetes.py) is driven by
 * test/fixtures/k8s-sandbox-check.py against the same node.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AGENT_IMAGE, agentBaseLayerMissing, buildAgentImage } from "../src/controller/k8s/testing/agent-image.js";
import { type K8sHarness, startK8sHarness } from "../src/controller/k8s/testing/harness.js";
import {
  type KubeCluster,
  kubeBinaries,
  skipWithoutKube,
  startKubeCluster,
} from "../src/controller/k8s/testing/kube-cluster.js";
import { type KubeNode, skipWithoutNode, startKubeNode } from "../src/controller/k8s/testing/kube-node.js";
import { podsOfJob } from "../src/controller/k8s/testing/kubelet.js";
import { skipWithout } from "../src/testing/requirement.js";
import { runProcess } from "../src/testing/run-process.js";

const SDK_DIR = fileURLToPath(new URL("../sdk/python", import.meta.url));
const SANDBOX_CHECK = fileURLToPath(new URL("./fixtures/k8s-sandbox-check.py", import.meta.url));

/**
 * The agent run in the pods: the SDK's runner calls `rollout`, whose return value becomes the reward. It posts
 * where it ran first (pid 1 of its own pid namespace, the SDK of the image), and exits 3 when the input says so.
 */
const AGENT_MODULE = `
import os, sys
import arclight_agent
from arclight_agent import emit_event

class Agent:
    def rollout(self, task, resources, rollout):
        emit_event("where", {"pid": os.getpid(), "sdk": arclight_agent.__file__, "uid": os.getuid()})
        if task.get("fail"):
            print("agent: the task says fail", file=sys.stderr, flush=True)
            sys.exit(3)
        return float(task["reward"])
`;

/**
 * The Job of an agent rollout: the agent image (imported, never pulled), the agent module from a ConfigMap, on the
 * host's network so that it reaches the test gateway on 127.0.0.1.
 */
const POD_TEMPLATE = `
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ job_name }}
spec:
  template:
    spec:
      hostNetwork: true
      automountServiceAccountToken: false
      containers:
        - name: agent
          image: ${AGENT_IMAGE}
          imagePullPolicy: Never
          command: ["python3", "-m", "arclight_agent", "run", "pod_agent:Agent"]
          env:
            - {name: PYTHONPATH, value: /agent}
          terminationMessagePolicy: FallbackToLogsOnError
          resources:
            limits: {memory: 256Mi}
          volumeMounts:
            - {name: agent, mountPath: /agent}
      volumes:
        - name: agent
          configMap: {name: pod-agent}
`;

let cluster: KubeCluster | undefined;
let node: KubeNode | undefined;
let imageDir: string | undefined;
let namespaces = 0;
const harnesses: K8sHarness[] = [];

async function harness(): Promise<K8sHarness> {
  const h = await startK8sHarness(cluster!, `pods${process.pid}-${namespaces++}`);
  harnesses.push(h);
  await cluster!.request("POST", `/api/v1/namespaces/${h.namespace}/configmaps`, {
    metadata: { name: "pod-agent" },
    data: { "pod_agent.py": AGENT_MODULE },
  });
  return h;
}

afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
});

function skipWithoutImage(): boolean {
  return skipWithout({
    name: "the agent image's base layer",
    missing: agentBaseLayerMissing,
    howToGet: "bash scripts/build-agent-image.sh (debootstrap from the apt mirror, as .ci/run does)",
  });
}

const skip = skipWithoutKube() || skipWithoutNode() || skipWithoutImage();

describe.skipIf(skip)("pods on a real node (containerd, kubelet)", { timeout: 240_000 }, () => {
  beforeAll(async () => {
    cluster = await startKubeCluster({ nodeLifecycle: true });
    node = await startKubeNode(cluster);
    imageDir = mkdtempSync(join(tmpdir(), "arclight-agent-image-"));
    await node.importImage(await buildAgentImage(imageDir));
  }, 600_000);
  afterAll(async () => {
    await node?.stop();
    await cluster?.stop();
    if (imageDir !== undefined) rmSync(imageDir, { recursive: true, force: true });
  });

  it("a Job's pod runs the Python agent in the agent image: it reaches the gateway, reports its reward, and its exit 0 makes the rollout succeed", async () => {
    const h = await harness();
    h.controller({ pod_log_lines: 5 });
    await h.create([{ rollout_id: "run-1", input: { reward: 0.75 }, config: { k8s: { job_template: POD_TEMPLATE } } }]);
    const done = await h.waitState("run-1", "succeeded", 180_000);
    expect(done.status.error_message).toBeNull();
    const [reward] = await h.client.getEvents("run-1", { eventType: "reward" });
    expect(reward?.data).toMatchObject({ value: 0.75, source: "pod_agent:Agent" });
    const [where] = await h.client.getEvents("run-1", { eventType: "where" });
    // pid 1: its own pid namespace, i.e. a container; the SDK is the one baked into the image from sdk/python.
    expect(where?.data).toEqual({ pid: 1, sdk: "/usr/lib/python3/dist-packages/arclight_agent/__init__.py", uid: 0 });
    const [pod] = await podsOfJob(cluster!, h.namespace, "arclight-rollout-run-1");
    const status = pod as unknown as {
      spec: { nodeName: string };
      status: { phase: string; containerStatuses: { state: { terminated?: { exitCode: number } } }[] };
    };
    expect(status.spec.nodeName).toBe(node!.name);
    expect(status.status.phase).toBe("Succeeded");
    expect(status.status.containerStatuses[0]?.state.terminated?.exitCode).toBe(0);
  });

  it("an agent that exits 3 fails the attempt: the Job fails and its pod's log, read from the kubelet, is stored", async () => {
    const h = await harness();
    h.controller({ pod_log_lines: 5 });
    await h.create([{ rollout_id: "bad-1", input: { fail: true }, config: { k8s: { job_template: POD_TEMPLATE } } }]);
    const failed = await h.waitState("bad-1", "failed", 180_000);
    expect(failed.status.error_message).toMatch(/^Job failed: BackoffLimitExceeded/);
    expect(await h.client.getEvents("bad-1", { eventType: "reward" })).toEqual([]);
    const [log] = await h.client.getEvents("bad-1", { eventType: "log" });
    expect(log?.data).toMatchObject({ exit_code: 3, log_source: "pod-log", job_name: "arclight-rollout-bad-1" });
    expect(String((log?.data as { text?: string } | undefined)?.text)).toContain("agent: the task says fail");
  });

  it("the Kubernetes sandbox: one pod per sandbox, exec through the API, files, limits, no network, reset, cleanup, and a SWE task through open_sandbox", async () => {
    const h = await harness();
    const kubectl = kubeBinaries()!.kubectl;
    const result = await runProcess(["python3", SANDBOX_CHECK], {
      cwd: SDK_DIR,
      env: {
        PATH: `${join(kubectl, "..")}:${process.env.PATH ?? "/usr/bin:/bin"}`,
        HOME: cluster!.dir,
        PYTHONPATH: SDK_DIR,
        KUBECONFIG: cluster!.kubeconfigPath,
        SANDBOX_NAMESPACE: h.namespace,
        SANDBOX_IMAGE: AGENT_IMAGE,
        HOST_IP: hostAddress(),
      },
    });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(report).toMatchObject({
      echo: { exit_code: 0, stdout: "hello from /work\n", timed_out: false },
      exit_code: 7,
      pid_one_is_sleep: true,
      file_round_trip: true,
      missing_file: "FileNotFoundError",
      escape_write: "SandboxError",
      escape_symlink_read: "SandboxError",
      timeout: { exit_code: -9, timed_out: true },
      timeout_killed_children: true,
      cpu_limit_exit: 137,
      cpu_limit_before_timeout: true,
      memory_limit_exit: 137,
      host_unreachable: true,
      reset_removed_file: true,
      reset_new_pod: true,
      closed_exec: "SandboxError",
      pods_after_close: 0,
      policies_after_close: 0,
      not_isolated: "SandboxError",
      not_isolated_pod_deleted: true,
      bad_image: "SandboxError",
      task_snapshot: "snapshot\nx = 1\ny = 2\n",
      task_tests_fail: 1,
      task_tests_pass: 0,
      task_diff: "a.py | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)",
      task_reset: true,
    });
  });
});

/** This machine's first non-loopback IPv4 address: the sandbox must not reach it. */
function hostAddress(): string {
  const address = Object.values(networkInterfaces())
    .flat()
    .find((a) => a !== undefined && a.family === "IPv4" && !a.internal);
  if (address === undefined) throw new Error("no non-loopback IPv4 address on this machine");
  return address.address;
}
