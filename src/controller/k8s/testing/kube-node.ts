/**
 * @module A real node for `kube-cluster.ts`: Debian's containerd, kubelet 1.20.2 and kube-scheduler under one temp
 * directory, so pods really run as containers here.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { pollUntil } from "../../../testing/poll.js";
import { skipWithout } from "../../../testing/requirement.js";
import { type KubeCluster, kubeBinaries, kubeBinDir } from "./kube-cluster.js";

const run = promisify(execFile);

/** Debian's paths of the container runtime. */
const CONTAINERD = "/usr/bin/containerd";
const CTR = "/usr/bin/ctr";
const RUNC = "/usr/sbin/runc";
const CNI_BIN_DIR = "/usr/lib/cni";

/** Pod network of the test node (the CNI bridge). Pods get no default route: see {@link cniConfig}. */
export const POD_SUBNET = "10.244.0.0/24";

/** The node's binaries, or undefined when one is missing. */
function nodeBinaries(): { kubelet: string; scheduler: string; pause: string } | undefined {
  const dir = kubeBinDir();
  const paths = { kubelet: join(dir, "kubelet"), scheduler: join(dir, "kube-scheduler"), pause: join(dir, "pause") };
  return Object.values(paths).every((p) => existsSync(p)) ? paths : undefined;
}

/** What this machine lacks to run a node, or null when nothing is missing. */
export function nodeMissing(): string | null {
  if (kubeBinaries() === undefined) return `the control plane binaries in ${kubeBinDir()}`;
  if (nodeBinaries() === undefined) return `kubelet, kube-scheduler or pause in ${kubeBinDir()}`;
  const absent = [CONTAINERD, CTR, RUNC, join(CNI_BIN_DIR, "bridge")].filter((p) => !existsSync(p));
  if (absent.length > 0) return `${absent.join(", ")} (Debian's containerd, runc, containernetworking-plugins)`;
  if (process.getuid?.() !== 0) return "root (containerd and the kubelet create namespaces, mounts and cgroups)";
  const cgroups = ["cpu", "cpuacct", "cpuset", "memory", "pids", "devices", "freezer"];
  const unmounted = cgroups.filter((c) => !existsSync(`/sys/fs/cgroup/${c}/cgroup.procs`));
  if (unmounted.length > 0) return `cgroup v1 controllers ${unmounted.join(", ")} under /sys/fs/cgroup`;
  return null;
}

/** Whether pod tests are skipped. @throws {Error} under `CI=true` when a piece is missing */
export function skipWithoutNode(): boolean {
  return skipWithout({
    name: "a Kubernetes node (containerd, runc, CNI plugins, kubelet, kube-scheduler, root, cgroup v1)",
    missing: nodeMissing,
    howToGet:
      "apt-get install containerd runc containernetworking-plugins and bash scripts/build-k8s.sh (as .ci/run does)",
  });
}

/** A running node. */
export interface KubeNode {
  /** Name of the Node object. */
  name: string;
  /** containerd's socket. */
  containerdSocket: string;
  /** Runs `ctr` against this node's containerd in the `k8s.io` namespace (where the kubelet's images live). */
  ctr(args: string[]): Promise<string>;
  /** Imports a docker-archive or OCI tarball into the node's image store. */
  importImage(tarball: string): Promise<void>;
  /** The last lines of a component's log (`containerd`, `kubelet`, `kube-scheduler`). */
  logTail(component: string, lines?: number): string;
  /** Stops kubelet, scheduler and containerd, kills what is left of the pods, removes the directory's contents. */
  stop(): Promise<void>;
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

/** containerd's config: own root and sockets, runc with cgroupfs (as the kubelet), the local pause image, CNI. */
function containerdConfig(dir: string, cniDir: string, pauseImage: string): string {
  return `version = 2
root = "${dir}/root"
state = "${dir}/state"
[grpc]
  address = "${dir}/containerd.sock"
[ttrpc]
  address = "${dir}/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${pauseImage}"
  disable_apparmor = true
  # Without CAP_SYS_RESOURCE (a container or VM that drops it, as CI machines may) no process may lower its
  # oom_score_adj, and runc fails on the pod sandbox's -998 ("failed to update /proc/self/oom_score_adj: Permission
  # denied"): clamp scores to containerd's own, as for rootless containerd.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "${RUNC}"
        Root = "${dir}/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN_DIR}"
    conf_dir = "${cniDir}"
    max_conf_num = 1
`;
}

/**
 * A bridge network without host address or routes: pods reach each other and nothing else; agents that must reach
 * the gateway use `hostNetwork: true`.
 */
function cniConfig(bridge: string, ipamDir: string): string {
  return JSON.stringify({
    cniVersion: "0.4.0",
    name: "arclight-test",
    plugins: [
      {
        type: "bridge",
        bridge,
        isGateway: false,
        ipMasq: false,
        ipam: { type: "host-local", ranges: [[{ subnet: POD_SUBNET }]], routes: [], dataDir: ipamDir },
      },
    ],
  });
}

/** The kubelet's configuration file (KubeletConfiguration v1beta1). */
function kubeletConfig(dir: string, port: number, healthzPort: number, cgroupRoot: string): string {
  return [
    "apiVersion: kubelet.config.k8s.io/v1beta1",
    "kind: KubeletConfiguration",
    "address: 127.0.0.1",
    `port: ${port}`,
    "readOnlyPort: 0",
    "healthzBindAddress: 127.0.0.1",
    `healthzPort: ${healthzPort}`,
    // The API server proxies logs and exec to the kubelet over loopback; nothing else can reach this port.
    "authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}",
    "authorization: {mode: AlwaysAllow}",
    `tlsCertFile: ${dir}/kubelet.crt`,
    `tlsPrivateKeyFile: ${dir}/kubelet.key`,
    "cgroupDriver: cgroupfs",
    // Pods' cgroups under a root of their own, so that two nodes on one machine never share one.
    `cgroupRoot: ${cgroupRoot}`,
    "cgroupsPerQOS: true",
    "enforceNodeAllocatable: [pods]",
    "failSwapOn: false",
    "podPidsLimit: 1024",
    "maxPods: 30",
    `resolvConf: ${dir}/resolv.conf`,
    "evictionHard: {memory.available: 1Mi, nodefs.available: 1%, imagefs.available: 1%}",
    "imageGCHighThresholdPercent: 100",
    "imageGCLowThresholdPercent: 99",
    "syncFrequency: 5s",
    "fileCheckFrequency: 5s",
    "nodeStatusUpdateFrequency: 5s",
    "runtimeRequestTimeout: 2m",
    "serializeImagePulls: false",
    "",
  ].join("\n");
}

/** Spawns a server with its output in `dir/<name>.log`. */
function startProcess(dir: string, name: string, file: string, args: string[]): ChildProcess {
  const log = openSync(join(dir, `${name}.log`), "a");
  return spawn(file, args, { stdio: ["ignore", log, log] });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/** The cgroup hierarchies the kubelet creates pod cgroups in (v1 controllers, and the hybrid layout's v2 one). */
const CGROUP_CONTROLLERS = [
  "cpu",
  "cpuacct",
  "cpuset",
  "memory",
  "pids",
  "devices",
  "freezer",
  "blkio",
  "systemd",
  "unified",
];

/** Creates `cgroupRoot` in every controller (the kubelet requires it to exist); cpuset needs its cpus and mems. */
function createCgroupRoot(cgroupRoot: string): void {
  for (const controller of CGROUP_CONTROLLERS) {
    const path = join("/sys/fs/cgroup", controller, cgroupRoot);
    if (controller === "unified" || !existsSync(join("/sys/fs/cgroup", controller))) continue;
    mkdirSync(path, { recursive: true });
    if (controller === "cpuset") {
      for (const file of ["cpuset.cpus", "cpuset.mems"]) {
        writeFileSync(join(path, file), readFileSync(join("/sys/fs/cgroup/cpuset", file)));
      }
    }
  }
}

/** Removes `cgroupRoot` and everything below it, deepest first (a cgroup must be empty to go). */
async function removeCgroupRoot(cgroupRoot: string): Promise<void> {
  for (const controller of CGROUP_CONTROLLERS) {
    const path = join("/sys/fs/cgroup", controller, cgroupRoot);
    if (!existsSync(path)) continue;
    // find -depth lists children before parents; rmdir of a cgroup with processes left fails, and is retried.
    await run("sh", ["-c", 'find "$1" -depth -type d -exec rmdir {} + 2>/dev/null; true', "_", path]);
  }
}

/** Options of {@link startKubeNode}. */
export interface KubeNodeOptions {
  /** How long the node may take to be Ready. Default 180 s. */
  readyTimeoutMs?: number;
}

/**
 * Starts containerd, kubelet and kube-scheduler and waits until the Node is Ready; `cluster` must run with
 * `nodeLifecycle: true`. @throws {Error} with the failing component's log tail
 */
export async function startKubeNode(cluster: KubeCluster, options: KubeNodeOptions = {}): Promise<KubeNode> {
  const bins = nodeBinaries();
  if (bins === undefined) throw new Error(`kubelet, kube-scheduler or pause missing in ${kubeBinDir()}`);
  // The kubelet listens on 127.0.0.1 only, and refuses a loopback node IP: the API server reaches it by the Node's
  // Hostname address (kube-cluster.ts prefers it), and "localhost" resolves to loopback everywhere.
  const name = "localhost";
  const dir = join(cluster.dir, "node");
  const suffix = `${process.pid}-${Date.now().toString(36)}`;
  const cgroupRoot = `/arclight-${suffix}`;
  const bridge = `arcl${Date.now().toString(36).slice(-8)}`;
  for (const sub of ["containerd", "cni", "kubelet"]) mkdirSync(join(dir, sub), { recursive: true });
  const children: ChildProcess[] = [];
  const socket = join(dir, "containerd", "containerd.sock");
  const ctr = async (args: string[]) =>
    (await run(CTR, ["--address", socket, "--namespace", "k8s.io", ...args], { maxBuffer: 64 << 20 })).stdout;
  const logTail = logTailOf(dir);
  const podLogsBefore = new Set(podLogEntries());
  const stop = async () => {
    for (const child of [...children].reverse()) await stopChild(child);
    await killLeftovers(join(dir, "containerd", "runc"));
    killShims(socket);
    await run("ip", ["link", "delete", bridge]).catch(() => {});
    await removeCgroupRoot(cgroupRoot);
    await unmountUnder(dir);
    rmSync(dir, { recursive: true, force: true });
    // The kubelet keeps container logs under /var/log (a fixed path in 1.20): remove what appeared since the start.
    for (const entry of podLogEntries()) if (!podLogsBefore.has(entry)) rmSync(entry, { recursive: true, force: true });
  };
  try {
    await startContainerd(dir, bridge, ctr, logTail, children);
    await importImage(ctr, await buildPauseImage(dir, bins.pause, PAUSE_IMAGE));
    createCgroupRoot(cgroupRoot);
    children.push(await startKubelet(dir, bins.kubelet, cluster, name, socket, cgroupRoot));
    children.push(
      startProcess(dir, "kube-scheduler", bins.scheduler, [
        `--kubeconfig=${cluster.kubeconfigPath}`,
        "--leader-elect=false",
        "--port=0",
        "--secure-port=0",
      ]),
    );
    await waitNodeReady(cluster, name, children, logTail, options.readyTimeoutMs ?? 180_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    name,
    containerdSocket: socket,
    ctr,
    importImage: (tarball) => importImage(ctr, tarball),
    logTail,
    stop,
  };
}

/** The pod sandbox image's reference; containerd's `sandbox_image`. */
const PAUSE_IMAGE = "docker.io/arclight/pause:1";

/** `logTail(component, lines)`: the last lines of `dir/<component>.log`. */
function logTailOf(dir: string): (component: string, lines?: number) => string {
  return (component, lines = 20) => {
    try {
      return readFileSync(join(dir, `${component}.log`), "utf8")
        .split("\n")
        .slice(-lines)
        .join("\n");
    } catch {
      return "(no log)";
    }
  };
}

/** Writes the configs and starts containerd (pushed onto `children` at once, so a failed start is still stopped). */
async function startContainerd(
  dir: string,
  bridge: string,
  ctr: (args: string[]) => Promise<string>,
  logTail: (component: string) => string,
  children: ChildProcess[],
): Promise<void> {
  const config = join(dir, "containerd", "config.toml");
  writeFileSync(config, containerdConfig(join(dir, "containerd"), join(dir, "cni"), PAUSE_IMAGE));
  writeFileSync(join(dir, "cni", "10-arclight.conflist"), cniConfig(bridge, join(dir, "cni-ipam")));
  const child = startProcess(dir, "containerd", CONTAINERD, ["--config", config]);
  children.push(child);
  await pollUntil(
    "containerd's socket",
    async () => {
      if (child.exitCode !== null) throw new Error(`containerd exited:\n${logTail("containerd")}`);
      return (await ctr(["version"])
        .then(() => true)
        .catch(() => undefined)) as true | undefined;
    },
    60_000,
    200,
  );
}

/** Writes the kubelet's serving certificate and configuration into `dir` and starts it against `socket`. */
async function startKubelet(
  dir: string,
  kubelet: string,
  cluster: KubeCluster,
  name: string,
  socket: string,
  cgroupRoot: string,
): Promise<ChildProcess> {
  writeFileSync(join(dir, "resolv.conf"), "");
  await run("openssl", [
    ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"],
    ...["-keyout", join(dir, "kubelet.key"), "-out", join(dir, "kubelet.crt")],
  ]);
  const [port, healthzPort] = [await freePort(), await freePort()];
  writeFileSync(join(dir, "kubelet.yaml"), kubeletConfig(dir, port, healthzPort, cgroupRoot));
  return startProcess(dir, "kubelet", kubelet, [
    `--config=${join(dir, "kubelet.yaml")}`,
    `--kubeconfig=${cluster.kubeconfigPath}`,
    "--container-runtime=remote",
    `--container-runtime-endpoint=unix://${socket}`,
    `--root-dir=${join(dir, "kubelet")}`,
    `--hostname-override=${name}`,
    `--cert-dir=${join(dir, "kubelet")}`,
    "--v=1",
  ]);
}

async function importImage(ctr: (args: string[]) => Promise<string>, tarball: string): Promise<void> {
  await ctr(["images", "import", tarball]);
}

/** Waits for the Node's Ready condition; fails early, with the logs, when a component exits. */
async function waitNodeReady(
  cluster: KubeCluster,
  name: string,
  children: ChildProcess[],
  logTail: (component: string, lines?: number) => string,
  timeoutMs: number,
): Promise<void> {
  try {
    await pollUntil(
      `Node ${name} Ready`,
      async () => {
        const dead = children.find((c) => c.exitCode !== null || c.signalCode !== null);
        if (dead !== undefined) throw new Error(`${dead.spawnfile} exited (${dead.exitCode ?? dead.signalCode})`);
        const node = (await cluster.request("GET", `/api/v1/nodes/${name}`).catch(() => undefined)) as
          | { spec?: { taints?: { key: string }[] }; status?: { conditions?: { type: string; status: string }[] } }
          | undefined;
        const ready = node?.status?.conditions?.find((c) => c.type === "Ready");
        // The node lifecycle controller lifts the taint the kubelet registered with; until then nothing schedules.
        const tainted = (node?.spec?.taints ?? []).some((t) => t.key === "node.kubernetes.io/not-ready");
        return ready?.status === "True" && !tainted ? true : undefined;
      },
      timeoutMs,
      500,
    );
  } catch (err) {
    const logs = ["containerd", "kubelet", "kube-scheduler"].map((c) => `--- ${c}\n${logTail(c, 25)}`).join("\n");
    throw new Error(`${(err as Error).message}\n${logs}`);
  }
}

/** The pod sandbox image from the static `pause` binary, as a docker-archive tarball (imported, not pulled). */
async function buildPauseImage(dir: string, pauseBinary: string, ref: string): Promise<string> {
  const { buildImageArchive } = await import("./agent-image.js");
  const layerDir = join(dir, "pause-layer");
  mkdirSync(layerDir, { recursive: true });
  writeFileSync(join(layerDir, "pause"), readFileSync(pauseBinary), { mode: 0o755 });
  const layer = join(dir, "pause-layer.tar");
  await run("tar", ["--numeric-owner", "-C", layerDir, "-cf", layer, "pause"]);
  return buildImageArchive(join(dir, "pause-image"), ref, [layer], { Entrypoint: ["/pause"] });
}

/** The entries of /var/log/pods and /var/log/containers, as paths. */
function podLogEntries(): string[] {
  return ["/var/log/pods", "/var/log/containers"].flatMap((d) =>
    existsSync(d) ? readdirSync(d).map((name) => join(d, name)) : [],
  );
}

/** Kills every container runc still knows under `runcRoot` (after containerd is gone, its shims may linger). */
async function killLeftovers(runcRoot: string): Promise<void> {
  for (const namespace of ["k8s.io", "default"]) {
    const root = join(runcRoot, namespace);
    if (!existsSync(root)) continue;
    const { stdout } = await run(RUNC, ["--root", root, "list", "-q"]).catch(() => ({ stdout: "" }));
    for (const id of stdout.split("\n").filter((l) => l !== "")) {
      await run(RUNC, ["--root", root, "kill", id, "KILL"]).catch(() => {});
      await run(RUNC, ["--root", root, "delete", "--force", id]).catch(() => {});
    }
  }
  // The shims exit once their container is gone; a few hundred ms later nothing holds the mounts.
  await new Promise((r) => setTimeout(r, 500));
}

/** Kills this node's leftover containerd shims, found by its socket path: without containerd they wait for ever. */
function killShims(socket: string): void {
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    } catch {
      continue; // gone meanwhile
    }
    if (!argv[0]?.endsWith("containerd-shim-runc-v2") || !argv.includes(socket)) continue;
    try {
      process.kill(Number(pid), "SIGKILL");
    } catch {
      // exited meanwhile
    }
  }
}

/** Unmounts everything mounted under `dir` (overlay snapshots, the kubelet's volumes, netns), deepest first. */
async function unmountUnder(dir: string): Promise<void> {
  const mounts = readFileSync("/proc/self/mounts", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[1] ?? "")
    .map((p) => p.replace(/\\040/g, " "))
    .filter((p) => p === dir || p.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const mount of mounts) await run("umount", ["-l", mount]).catch(() => {});
}
