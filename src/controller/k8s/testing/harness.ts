/** @module Kubernetes controller test harness: a namespace, a real gateway and client, and K8sControllers. */
import { Writable } from "node:stream";
import type { KubeConfig, V1Job } from "@kubernetes/client-node";
import { type Logger, pino } from "pino";
import { GatewayClient } from "../../../gateway/client.js";
import { startTestGateway, type TestGateway } from "../../../gateway/testing/serve.js";
import type { Rollout, RolloutCreateInput } from "../../../protocol/index.js";
import { pollUntil } from "../../../testing/poll.js";
import { type ControllerConfigInput, ControllerConfigSchema } from "../../config.js";
import { K8sController, type K8sControllerOptions } from "../controller.js";
import { MANAGED_BY_SELECTOR } from "../job-manifest.js";
import { KubeApi } from "../kube-api.js";
import type { KubeCluster } from "./kube-cluster.js";

/** A Job template as AGL users write them: the Python example agent in a stock image, the question from input. */
export const TEST_TEMPLATE = `
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ job_name }}
spec:
  template:
    spec:
      containers:
        - name: agent
          image: python:3.11-slim
          command: ["python", "/app/agent.py"]
          env:
            - name: QUESTION
              value: {{ input.question | yaml_escape }}
`;

/** One namespace, one gateway, and the controllers started on them. */
export interface K8sHarness {
  namespace: string;
  gateway: TestGateway;
  client: GatewayClient;
  /** Jobs API of the namespace, as admin. */
  api: KubeApi;
  /** Controller log lines (JSON objects) so far. */
  logs: Record<string, unknown>[];
  /** A started controller; `overrides` win over the test defaults; `kubeConfig` defaults to admin. */
  controller(
    overrides?: ControllerConfigInput,
    options?: Partial<Pick<K8sControllerOptions, "limiterClock" | "onReported">> & { kubeConfig?: KubeConfig },
  ): K8sController;
  /** Creates rollouts that run TEST_TEMPLATE (unless their config says otherwise). */
  create(creates: (Partial<RolloutCreateInput> & { rollout_id: string })[]): Promise<Rollout[]>;
  /** Polls `probe` every 25 ms until it returns a value other than undefined; fails after `timeoutMs`. */
  waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs?: number): Promise<T>;
  /** Waits until the rollout is in `state`. */
  waitState(rolloutId: string, state: Rollout["status"]["state"], timeoutMs?: number): Promise<Rollout>;
  /** The managed Jobs of the namespace. */
  jobs(): Promise<V1Job[]>;
  /** Shuts the controllers down, closes client and gateway, deletes the namespace. */
  close(): Promise<void>;
}

/** Polls `probe` every 25 ms until it returns a value other than undefined; fails after `timeoutMs`. */
function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000): Promise<T> {
  return pollUntil(what, probe, timeoutMs, 25);
}

/** A pino logger whose JSON lines are pushed onto `logs`. */
function capturingLogger(logs: Record<string, unknown>[]): Logger {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n")) if (line !== "") logs.push(JSON.parse(line));
      done();
    },
  });
  return pino({ level: process.env.ARCLIGHT_TEST_LOG ?? "info" }, sink);
}

/** Creates a namespace and starts a gateway (key `k8s-test-key`). */
export async function startK8sHarness(cluster: KubeCluster, namespace: string): Promise<K8sHarness> {
  await cluster.request("POST", "/api/v1/namespaces", {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: namespace },
  });
  const gateway = await startTestGateway({ key: "k8s-test-key" });
  const client = new GatewayClient({ baseUrl: gateway.url, key: "k8s-test-key" });
  const api = new KubeApi(cluster.kubeConfig(), namespace);
  const controllers: K8sController[] = [];
  const logs: Record<string, unknown>[] = [];
  const logger = capturingLogger(logs);

  return {
    namespace,
    gateway,
    client,
    api,
    logs,
    controller(overrides = {}, options = {}) {
      const config = ControllerConfigSchema.parse({
        mode: "k8s",
        gateway_url: gateway.url,
        key: "k8s-test-key",
        namespace,
        poll_interval_seconds: 0.2,
        max_jobs_per_minute: 6000,
        job_burst: 100,
        ...overrides,
      });
      const kubeApi = options.kubeConfig ? new KubeApi(options.kubeConfig, namespace) : api;
      const controller = new K8sController({ client, config, api: kubeApi, logger, ...options });
      controllers.push(controller);
      controller.start();
      return controller;
    },
    create(creates) {
      return client.createRollouts(
        creates.map((c) => ({
          input: { question: "what is 2+2?" },
          ...c,
          config: { timeout_seconds: 600, k8s: { job_template: TEST_TEMPLATE }, ...c.config },
        })),
      );
    },
    waitFor,
    waitState(rolloutId, state, timeoutMs) {
      return waitFor(
        `rollout ${rolloutId} ${state}`,
        async () => {
          const { rollout } = await client.getRollout(rolloutId);
          return rollout.status.state === state ? rollout : undefined;
        },
        timeoutMs,
      );
    },
    async jobs() {
      return (await api.listJobs(MANAGED_BY_SELECTOR)).items;
    },
    async close() {
      for (const controller of controllers) await controller.shutdown();
      await client.close();
      await gateway.close();
      await cluster.request("DELETE", `/api/v1/namespaces/${namespace}`).catch(() => {});
    },
  };
}
