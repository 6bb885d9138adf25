/**
 * @module A throw-away Kubernetes control plane on 127.0.0.1 (`scripts/build-k8s.sh`); nodes are a fake kubelet
 * (`kubelet.ts`) or a real one (`kube-node.ts`).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { Agent, fetch } from "undici";
import { skipWithout } from "../../../testing/requirement.js";

/** Where `scripts/build-k8s.sh` caches kube-apiserver, kube-controller-manager and kubectl. */
export function kubeBinDir(): string {
  return process.env.ARCLIGHT_K8S_BIN ?? join(homedir(), ".cache/arclight/k8s-1.20.2");
}

/** Paths of the binaries, or undefined when one is missing. */
export function kubeBinaries():
  | { etcd: string; apiserver: string; controllerManager: string; kubectl: string }
  | undefined {
  const dir = kubeBinDir();
  const etcd = ["/usr/bin/etcd", "/usr/local/bin/etcd"].find((p) => existsSync(p));
  const paths = {
    apiserver: join(dir, "kube-apiserver"),
    controllerManager: join(dir, "kube-controller-manager"),
    kubectl: join(dir, "kubectl"),
  };
  if (etcd === undefined || !Object.values(paths).every((p) => existsSync(p))) return undefined;
  return { etcd, ...paths };
}

/** Whether API-server tests are skipped. @throws {Error} under `CI=true` when a binary is missing */
export function skipWithoutKube(): boolean {
  return skipWithout({
    name: "a Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, kubectl 1.20.2)",
    missing: () => (kubeBinaries() === undefined ? `etcd in /usr/bin or a binary in ${kubeBinDir()} is missing` : null),
    howToGet:
      "bash scripts/build-k8s.sh installs etcd and builds the rest offline from Debian's sources (12+ minutes on " +
      "2 cores, as .ci/run does), or set ARCLIGHT_K8S_BIN to a folder that holds them",
  });
}

/** A running control plane. */
export interface KubeCluster {
  /** `https://127.0.0.1:PORT`. */
  server: string;
  /** Bearer token of `admin` (group system:masters). */
  adminToken: string;
  /** A kubeconfig file for `admin`. */
  kubeconfigPath: string;
  dir: string;
  /** A KubeConfig for `admin`, or for another bearer token (e.g. a ServiceAccount's). */
  kubeConfig(token?: string): KubeConfig;
  /** Writes a kubeconfig file for `token` and returns its path. */
  writeKubeconfig(name: string, token: string): string;
  /** A raw API call as admin (JSON in, JSON out). @throws {Error} with the status and body on a non-2xx answer */
  request(method: string, path: string, body?: unknown, contentType?: string): Promise<unknown>;
  /** Stops the controller manager, the API server and etcd, and removes the directory. */
  stop(): Promise<void>;
}

/** Options of {@link startKubeCluster}. */
export interface KubeClusterOptions {
  /** Start kube-controller-manager (Jobs get Pods, foreground deletion, TTL). Default true. */
  controllerManager?: boolean;
  /** Also run the node lifecycle controller, which lifts a Ready Node's `not-ready` taint. Default false. */
  nodeLifecycle?: boolean;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0));
    });
  });
}

/** Spawns a server with its output in `dir/<name>.log`. */
function startProcess(dir: string, name: string, file: string, args: string[]): ChildProcess {
  const log = openSync(join(dir, `${name}.log`), "a");
  return spawn(file, args, { stdio: ["ignore", log, log] });
}

function logTail(dir: string, name: string): string {
  try {
    return readFileSync(join(dir, `${name}.log`), "utf8")
      .split("\n")
      .slice(-15)
      .join("\n");
  } catch {
    return "(no log)";
  }
}

const insecure = new Agent({ connect: { rejectUnauthorized: false } });

async function waitReady(server: string, token: string, children: ChildProcess[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const child of children) if (child.exitCode !== null) throw new Error(`${child.spawnfile} exited`);
    try {
      const res = await fetch(`${server}/readyz`, {
        headers: { authorization: `Bearer ${token}` },
        dispatcher: insecure,
      });
      if (res.status === 200) return;
      await res.text();
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`kube-apiserver not ready after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function kubeconfigYaml(server: string, token: string): string {
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: test",
    "  cluster:",
    `    server: ${server}`,
    "    insecure-skip-tls-verify: true",
    "users:",
    "- name: user",
    "  user:",
    `    token: ${token}`,
    "contexts:",
    "- name: test",
    "  context: {cluster: test, user: user}",
    "current-context: test",
    "",
  ].join("\n");
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

function etcdArgs(dir: string, etcdPort: number, peerPort: number): string[] {
  return [
    `--data-dir=${join(dir, "etcd")}`,
    "--name=default",
    `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
    `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
    `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
  ];
}

/** kube-apiserver flags; writes the token file and the service-account key pair into `dir`. */
function apiserverArgs(dir: string, etcdPort: number, apiPort: number, adminToken: string): string[] {
  writeFileSync(join(dir, "tokens.csv"), `${adminToken},admin,admin,"system:masters"\n`);
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  writeFileSync(join(dir, "sa.key"), privateKey.export({ type: "pkcs1", format: "pem" }));
  writeFileSync(join(dir, "sa.pub"), publicKey.export({ type: "spki", format: "pem" }));
  mkdirSync(join(dir, "certs"));
  return [
    `--etcd-servers=http://127.0.0.1:${etcdPort}`,
    "--bind-address=127.0.0.1",
    "--advertise-address=127.0.0.1",
    `--secure-port=${apiPort}`,
    "--insecure-port=0",
    `--cert-dir=${join(dir, "certs")}`,
    `--token-auth-file=${join(dir, "tokens.csv")}`,
    "--authorization-mode=RBAC",
    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
    `--service-account-key-file=${join(dir, "sa.pub")}`,
    `--service-account-signing-key-file=${join(dir, "sa.key")}`,
    "--service-cluster-ip-range=10.0.0.0/24",
    "--disable-admission-plugins=ServiceAccount",
    "--feature-gates=TTLAfterFinished=true",
    "--enable-priority-and-fairness=false",
    "--endpoint-reconciler-type=none",
    // A real kubelet here listens on 127.0.0.1 and is reached by its Hostname address, "localhost" (kube-node.ts);
    // the fake one of kubelet.ts has an InternalIP only.
    "--kubelet-preferred-address-types=Hostname,InternalIP",
    "--profiling=false",
    // Job watches go to etcd, which is compacted every 10 s: an old resourceVersion really expires (410 Gone), as
    // on a busy cluster after the watch cache has moved on.
    "--watch-cache-sizes=jobs.batch#0",
    "--etcd-compaction-interval=10s",
  ];
}

function controllerManagerArgs(kubeconfigPath: string, nodeLifecycle: boolean): string[] {
  const controllers = ["job", "garbagecollector", "ttl-after-finished", ...(nodeLifecycle ? ["nodelifecycle"] : [])];
  return [
    `--kubeconfig=${kubeconfigPath}`,
    `--controllers=${controllers.join(",")}`,
    "--leader-elect=false",
    "--port=0",
    "--secure-port=0",
    "--feature-gates=TTLAfterFinished=true",
    "--use-service-account-credentials=false",
  ];
}

/** The handle of a running control plane. */
function clusterHandle(server: string, adminToken: string, dir: string, stop: () => Promise<void>): KubeCluster {
  return {
    server,
    adminToken,
    kubeconfigPath: join(dir, "admin.kubeconfig"),
    dir,
    kubeConfig(token = adminToken) {
      const config = new KubeConfig();
      config.loadFromString(kubeconfigYaml(server, token));
      return config;
    },
    writeKubeconfig(name, token) {
      const path = join(dir, `${name}.kubeconfig`);
      writeFileSync(path, kubeconfigYaml(server, token));
      return path;
    },
    async request(method, path, body, contentType = "application/json") {
      const res = await fetch(`${server}${path}`, {
        method,
        headers: { authorization: `Bearer ${adminToken}`, "content-type": contentType },
        body: body === undefined ? undefined : JSON.stringify(body),
        dispatcher: insecure,
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return text === "" ? undefined : JSON.parse(text);
    },
    stop,
  };
}

/**
 * Starts etcd, kube-apiserver (ServiceAccount admission off: no kubelet mounts tokens) and kube-controller-manager.
 * @throws {Error} with the failing server's log tail when one is not up in 120 s
 */
export async function startKubeCluster(options: KubeClusterOptions = {}): Promise<KubeCluster> {
  const bins = kubeBinaries();
  if (bins === undefined) throw new Error(`Kubernetes binaries missing in ${kubeBinDir()}: run scripts/build-k8s.sh`);
  const dir = mkdtempSync(join(tmpdir(), "arclight-kube-"));
  const children: ChildProcess[] = [];
  const stop = async () => {
    for (const child of [...children].reverse()) await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
    children.push(startProcess(dir, "etcd", bins.etcd, etcdArgs(dir, etcdPort, peerPort)));
    const adminToken = randomBytes(16).toString("hex");
    const args = apiserverArgs(dir, etcdPort, apiPort, adminToken);
    children.push(startProcess(dir, "kube-apiserver", bins.apiserver, args));
    const server = `https://127.0.0.1:${apiPort}`;
    try {
      await waitReady(server, adminToken, children, 120_000);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${logTail(dir, "etcd")}\n${logTail(dir, "kube-apiserver")}`);
    }
    const cluster = clusterHandle(server, adminToken, dir, stop);
    writeFileSync(cluster.kubeconfigPath, kubeconfigYaml(server, adminToken));
    if (options.controllerManager !== false) {
      const cmArgs = controllerManagerArgs(cluster.kubeconfigPath, options.nodeLifecycle === true);
      children.push(startProcess(dir, "kube-controller-manager", bins.controllerManager, cmArgs));
    }
    return cluster;
  } catch (err) {
    await stop();
    throw err;
  }
}
