/**
 * @module The test plays the kubelet: binds Pods to a fake Node, writes their status, and serves their logs over
 * HTTPS for the API server's `pods/log` proxy.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { join } from "node:path";
import type { KubeCluster } from "./kube-cluster.js";

/** A Pod as the API returns it (only what the tests read). */
export interface TestPod {
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  spec: { containers: { name: string; env?: unknown[] }[]; nodeName?: string };
  status?: { phase?: string };
}

/** The fake kubelet: one Node whose kubelet endpoint is a local HTTPS server answering `containerLogs`. */
export interface FakeKubelet {
  nodeName: string;
  /** Log text served for `namespace/pod/container`. */
  logs: Map<string, string>;
  /** Log requests the API server forwarded here. */
  requests: number;
  stop(): Promise<void>;
}

/** Registers Node `nodeName` with this process's HTTPS server as its kubelet. */
export async function startFakeKubelet(cluster: KubeCluster, nodeName = "arclight-test-node"): Promise<FakeKubelet> {
  const key = join(cluster.dir, "kubelet.key");
  const cert = join(cluster.dir, "kubelet.crt");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      key,
      "-out",
      cert,
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
    ],
    { stdio: "ignore" },
  );
  const logs = new Map<string, string>();
  const kubelet: FakeKubelet = { nodeName, logs, requests: 0, stop: async () => {} };
  const server: Server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    const url = new URL(req.url ?? "/", "https://127.0.0.1");
    const match = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    kubelet.requests++;
    const text = match ? logs.get(`${match[1]}/${match[2]}/${match[3]}`) : undefined;
    if (text === undefined) {
      res.writeHead(404).end("no such container log");
      return;
    }
    res
      .writeHead(200, { "content-type": "text/plain" })
      .end(tailLines(text, Number(url.searchParams.get("tailLines") ?? "0")));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await cluster.request("POST", "/api/v1/nodes", { apiVersion: "v1", kind: "Node", metadata: { name: nodeName } });
  await cluster.request(
    "PATCH",
    `/api/v1/nodes/${nodeName}/status`,
    {
      status: {
        addresses: [{ type: "InternalIP", address: "127.0.0.1" }],
        daemonEndpoints: { kubeletEndpoint: { Port: port } },
      },
    },
    "application/merge-patch+json",
  );
  kubelet.stop = () => new Promise((resolve) => server.close(() => resolve()));
  return kubelet;
}

/** The last `count` lines of `text` as the kubelet answers `tailLines` (each line keeps its newline); 0: all. */
function tailLines(text: string, count: number): string {
  if (count <= 0) return text;
  const lines = text.split("\n");
  const ended = text.endsWith("\n");
  if (ended) lines.pop();
  return lines.slice(-count).join("\n") + (ended ? "\n" : "");
}

/** Lists the Pods of a Job (the Job controller labels them `job-name`). */
export async function podsOfJob(cluster: KubeCluster, namespace: string, jobName: string): Promise<TestPod[]> {
  const list = (await cluster.request(
    "GET",
    `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(`job-name=${jobName}`)}`,
  )) as { items: TestPod[] };
  return list.items;
}

/** Waits until the Job controller created a Pod for the Job. */
export async function waitForPod(
  cluster: KubeCluster,
  namespace: string,
  jobName: string,
  timeoutMs = 60_000,
): Promise<TestPod> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [pod] = await podsOfJob(cluster, namespace, jobName);
    if (pod !== undefined) return pod;
    if (Date.now() > deadline) throw new Error(`no Pod for Job ${jobName} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Binds a Pod to a Node, as the scheduler would. */
export async function bindPod(cluster: KubeCluster, pod: TestPod, nodeName: string): Promise<void> {
  const { name, namespace } = pod.metadata;
  await cluster.request("POST", `/api/v1/namespaces/${namespace}/pods/${name}/binding`, {
    apiVersion: "v1",
    kind: "Binding",
    metadata: { name },
    target: { apiVersion: "v1", kind: "Node", name: nodeName },
  });
}

/** Ends a Pod as a kubelet reports it: `Succeeded` (exit 0) or `Failed`, with `exitCode` and optional `message`. */
export async function finishPod(
  cluster: KubeCluster,
  pod: TestPod,
  result: { exitCode: number; message?: string },
): Promise<void> {
  const { name, namespace } = pod.metadata;
  const now = new Date().toISOString();
  const container = pod.spec.containers[0]!.name;
  const terminated = {
    exitCode: result.exitCode,
    reason: result.exitCode === 0 ? "Completed" : "Error",
    startedAt: now,
    finishedAt: now,
    ...(result.message === undefined ? {} : { message: result.message }),
  };
  const status = {
    phase: result.exitCode === 0 ? "Succeeded" : "Failed",
    containerStatuses: [
      { name: container, ready: false, restartCount: 0, image: "python:3.11-slim", imageID: "", state: { terminated } },
    ],
  };
  await cluster.request(
    "PATCH",
    `/api/v1/namespaces/${namespace}/pods/${name}/status`,
    { status },
    "application/merge-patch+json",
  );
}
