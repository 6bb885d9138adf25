/**
 * @module Benchmark of the Kubernetes controller against a real kube-apiserver + etcd (scripts/build-k8s.sh; no
 * controller manager and no kubelet: the bench writes Job status itself, as the Job controller would):
 * 1. Jobs created per second at the rate limit (`--rate` per minute, `--burst`; the rate is measured after the burst)
 *    and with the limit far away;
 * 2. latency from "Job status Complete written" to "rollout succeeded in the gateway", p50/p99, one Job at a time;
 * 3. RSS of `arclight controller --mode k8s` (a child process) idle, then managing `--jobs` Jobs.
 *
 * Usage: `npx tsx bench/k8s.ts [--rate 600] [--burst 10] [--latency-samples 100] [--jobs 1000]`
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { pino } from "pino";
import { MANAGED_BY_SELECTOR } from "../src/controller/k8s/job-manifest.js";
import { JobWatcher } from "../src/controller/k8s/job-watch.js";
import { type K8sHarness, startK8sHarness } from "../src/controller/k8s/testing/harness.js";
import { type KubeCluster, kubeBinaries, startKubeCluster } from "../src/controller/k8s/testing/kube-cluster.js";

const { values } = parseArgs({
  options: {
    rate: { type: "string", default: "600" },
    burst: { type: "string", default: "10" },
    "latency-samples": { type: "string", default: "100" },
    jobs: { type: "string", default: "1000" },
  },
});
const ratePerMinute = Number(values.rate);
const burst = Number(values.burst);
const latencySamples = Number(values["latency-samples"]);
const managedJobs = Number(values.jobs);

const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");

/** Seconds until `count` Jobs were seen by a watch of our own, and the Jobs/s over that span. */
async function creationRate(cluster: KubeCluster, ns: string, count: number, maxPerMinute: number, burst: number) {
  const h = await startK8sHarness(cluster, ns);
  try {
    const seen: number[] = [];
    const names = new Set<string>();
    const watcher = new JobWatcher({
      api: h.api,
      labelSelector: MANAGED_BY_SELECTOR,
      logger: pino({ level: "silent" }),
      onChange: (job) => {
        const name = job.metadata?.name ?? "";
        if (names.has(name)) return;
        names.add(name);
        seen.push(performance.now());
      },
    });
    watcher.start();
    await watcher.whenSynced();
    await h.create(Array.from({ length: count }, (_, i) => ({ rollout_id: `rate-${i}` })));
    const start = performance.now();
    h.controller({ max_jobs_per_minute: maxPerMinute, job_burst: burst, poll_interval_seconds: 0.2 });
    await h.waitFor(`${count} Jobs`, () => (seen.length >= count ? true : undefined), 600_000);
    watcher.stop();
    const seconds = (seen[count - 1]! - start) / 1000;
    return { seconds, perSecond: (count - burst) / ((seen[count - 1]! - seen[burst - 1]!) / 1000) };
  } finally {
    await h.close();
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Marks a Job Complete through the status subresource (what the Job controller does when its Pod succeeded). */
async function completeJob(cluster: KubeCluster, ns: string, name: string): Promise<void> {
  const now = new Date().toISOString();
  const status = {
    conditions: [{ type: "Complete", status: "True", lastProbeTime: now, lastTransitionTime: now }],
    succeeded: 1,
    startTime: now,
    completionTime: now,
  };
  await cluster.request(
    "PATCH",
    `/apis/batch/v1/namespaces/${ns}/jobs/${name}/status`,
    { status },
    "application/merge-patch+json",
  );
}

/** Job Complete → rollout succeeded, one Job at a time. @returns latencies in ms, sorted */
async function completionLatency(cluster: KubeCluster, ns: string): Promise<number[]> {
  const h: K8sHarness = await startK8sHarness(cluster, ns);
  try {
    const reportedAt = new Map<string, number>();
    h.controller({ poll_interval_seconds: 1 }, { onReported: (o) => reportedAt.set(o.rolloutId, performance.now()) });
    const ids = Array.from({ length: latencySamples }, (_, i) => `lat-${i}`);
    await h.create(ids.map((rollout_id) => ({ rollout_id })));
    for (const id of ids) await h.waitState(id, "running", 120_000);
    const latencies: number[] = [];
    for (const id of ids) {
      await completeJob(cluster, ns, `arclight-rollout-${id}`);
      const completedAt = performance.now();
      await h.waitFor(`${id} reported`, () => reportedAt.get(id), 30_000);
      latencies.push(reportedAt.get(id)! - completedAt);
    }
    return latencies.sort((a, b) => a - b);
  } finally {
    await h.close();
  }
}

function rssKiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"));
  return Number(line?.replace(/\D+/g, "") ?? 0);
}

/** RSS of the CLI controller idle, then with `managedJobs` Jobs running. */
async function controllerRss(cluster: KubeCluster, ns: string): Promise<{ idleMiB: number; loadedMiB: number }> {
  const h = await startK8sHarness(cluster, ns);
  const tsx = createRequire(import.meta.url).resolve("tsx");
  const main = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
  const args = ["controller", "--mode", "k8s", "--kubeconfig", cluster.kubeconfigPath, "--namespace", ns];
  args.push("--gateway-url", h.gateway.url, "--key", "k8s-test-key", "--log-level", "warn");
  args.push("--max-jobs-per-minute", "60000", "--job-burst", "1000", "--poll-interval", "1");
  const child = spawn(process.execPath, ["--import", tsx, main, ...args], { stdio: "ignore" });
  try {
    await new Promise((r) => setTimeout(r, 8000));
    const idleMiB = rssKiB(child.pid!) / 1024;
    await h.create(Array.from({ length: managedJobs }, (_, i) => ({ rollout_id: `rss-${i}` })));
    await h.waitFor(
      `${managedJobs} running`,
      async () => ((await h.client.listAllRollouts({ states: ["running"] })).length >= managedJobs ? true : undefined),
      900_000,
    );
    // A few passes over the full set, then the figure.
    await new Promise((r) => setTimeout(r, 10_000));
    return { idleMiB, loadedMiB: rssKiB(child.pid!) / 1024 };
  } finally {
    child.kill("SIGTERM");
    await h.close();
  }
}

async function main(): Promise<void> {
  if (kubeBinaries() === undefined) throw new Error("Kubernetes binaries missing: run scripts/build-k8s.sh");
  console.log(`setup: ${availableParallelism()} cores, load ${load()}; kube-apiserver 1.20.2 + etcd on 127.0.0.1`);
  const cluster = await startKubeCluster({ controllerManager: false });
  try {
    const limited = await creationRate(cluster, "bench-rate", 200, ratePerMinute, burst);
    console.log(
      `creation at the limit: ${ratePerMinute}/min (${(ratePerMinute / 60).toFixed(2)}/s), burst ${burst} -> ${limited.perSecond.toFixed(2)} Jobs/s measured after the burst ` +
        `(ratio ${(limited.perSecond / (ratePerMinute / 60)).toFixed(3)}), 200 Jobs in ${limited.seconds.toFixed(1)} s; load ${load()}`,
    );
    const open = await creationRate(cluster, "bench-open", 200, 600_000, 1);
    console.log(`creation with no effective limit: ${open.perSecond.toFixed(1)} Jobs/s (200 Jobs); load ${load()}`);
    const latencies = await completionLatency(cluster, "bench-latency");
    console.log(
      `Job Complete -> rollout succeeded, ${latencies.length} Jobs one at a time: p50 ${percentile(latencies, 50).toFixed(1)} ms, ` +
        `p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${latencies.at(-1)!.toFixed(1)} ms; load ${load()}`,
    );
    const rss = await controllerRss(cluster, "bench-rss");
    console.log(
      `controller RSS: idle ${rss.idleMiB.toFixed(0)} MiB, with ${managedJobs} managed Jobs ${rss.loadedMiB.toFixed(0)} MiB; load ${load()}`,
    );
  } finally {
    await cluster.stop();
  }
}

await main();
