import { KubeConfig } from "@kubernetes/client-node";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { GatewayClient } from "../../gateway/client.js";
import { startTestGateway } from "../../gateway/testing/serve.js";
import { ControllerConfigSchema } from "../config.js";
import { K8sController } from "./controller.js";
import { KubeApi } from "./kube-api.js";
import { TEST_TEMPLATE } from "./testing/harness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A KubeConfig for an API server that is not there (port 1 on loopback refuses at once). */
function deadCluster(): KubeConfig {
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: "dead", server: "https://127.0.0.1:1", skipTLSVerify: true }],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "dead", cluster: "dead", user: "u" }],
    currentContext: "dead",
  });
  return config;
}

describe("K8sController with the API server down", () => {
  it("fails rollouts whose template is not one Job without any cluster call, keeps valid ones queuing, and keeps running", async () => {
    const gateway = await startTestGateway({ key: "k" });
    const client = new GatewayClient({ baseUrl: gateway.url, key: "k" });
    const config = ControllerConfigSchema.parse({
      mode: "k8s",
      gateway_url: gateway.url,
      key: "k",
      poll_interval_seconds: 0.05,
    });
    const controller = new K8sController({
      client,
      config,
      api: new KubeApi(deadCluster(), "default", 2000),
      logger: pino({ level: "silent" }),
    });
    cleanups.push(async () => {
      await controller.shutdown();
      await client.close();
      await gateway.close();
    });
    await client.createRollouts([
      { rollout_id: "bad", input: {}, config: { k8s: { job_template: "kind: Job\nspec: [\n" } } },
      { rollout_id: "good", input: { question: "q" }, config: { k8s: { job_template: TEST_TEMPLATE } } },
    ]);
    controller.start();
    const deadline = Date.now() + 30_000;
    let bad = (await client.getRollout("bad")).rollout;
    while (bad.status.state !== "failed" && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
      bad = (await client.getRollout("bad")).rollout;
    }
    expect(bad.status.error_message).toMatch(/^Invalid Job spec: job template is not valid YAML/);
    const passes = controller.passes;
    while (controller.passes < passes + 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(controller.passes).toBeGreaterThanOrEqual(passes + 3);
    expect((await client.getRollout("good")).rollout.status.state).toBe("queuing");
  });
});
