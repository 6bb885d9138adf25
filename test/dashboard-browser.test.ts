/**
 * The dashboard in a real browser (Debian's Chromium via playwright-core) against a real gateway fed by a real short
 * training run (tiny embedded engine, engine server, local controller, node agents through the proxy). Screenshots
 * of each page go to `test-output/dashboard/`.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MISMATCH_CALLS, seedTraceRollout } from "../src/gateway/testing/trace-fixture.js";
import { launchChromium, skipWithoutChromium } from "../src/testing/chromium.js";
import { parseTrainerConfig } from "../src/trainer/config.js";
import { runTraining, type TrainSummary } from "../src/trainer/loop.js";
import { RunPoster } from "../src/trainer/run-poster.js";
import { startTrainerStack, TEST_AGENT, type TrainerStack } from "./support/stack.js";

const SHOTS = fileURLToPath(new URL("../test-output/dashboard/", import.meta.url));
const TOTAL_STEPS = 4;

let stack: TrainerStack;
let browser: BrowserContext;
let training: Promise<TrainSummary>;

/** A fresh page, logged in with the gateway key. */
async function loggedIn(): Promise<Page> {
  await browser.clearCookies();
  const page = await browser.newPage();
  await page.goto(`${stack.gateway.url}/ui/`);
  await page.fill("input[name=key]", "test-key");
  await page.click("button[type=submit]");
  await page.waitForSelector("header");
  return page;
}

/** Browser-side expressions (strings: this file is compiled without the DOM types). */
const POINTS_JS = `Number(document.querySelector('.chart[data-metric="reward/mean"]')?.getAttribute("data-points"))`;
const COUNT_JS = `document.querySelector("#rollout-count")?.textContent`;

/** Number of points in the chart of `metric` (the chart's `data-points`, one count per shown run). */
async function points(page: Page, metric: string): Promise<number> {
  const value = await page.getAttribute(`.chart[data-metric="${metric}"]`, "data-points");
  return Number((value ?? "0").split(",")[0]);
}

describe.skipIf(skipWithoutChromium())("dashboard in Chromium", () => {
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    stack = await startTrainerStack({ poolSize: 4 });
    await seedTraceRollout(stack.gateway.store, "seeded-mismatch", MISMATCH_CALLS, 0.5);
    const config = parseTrainerConfig({
      name: "live",
      train_batch_size: 2,
      n: 2,
      total_steps: TOTAL_STEPS,
      rollout_timeout_seconds: 60,
      controller: { command: ["node", TEST_AGENT], env_map: { AGL_INPUT: "input" } },
      aggregator: { level: "trajectory", max_prompt_length: 128, max_response_length: 96 },
      optimizer: { learning_rate: 1e-3 },
      checkpoint_interval: 0,
      val_interval: 2,
      pause_retry_after_seconds: 0,
    });
    const poster = new RunPoster(stack.client, "live");
    poster.start({ ...config }, TOTAL_STEPS);
    // Each step waits for the page: the run cannot finish before the browser has seen it move.
    const items = Array.from({ length: 4 }, (_, i) => ({ index: i, input: { prompt: `say a ${i}`, turns: 2 } }));
    training = runTraining({
      config,
      client: stack.client,
      engine: stack.engine,
      serving: stack.serving,
      trainData: items,
      valData: items.slice(0, 2),
      runDir: join(stack.dir, "runs", "live"),
      reporter: poster,
    }).then(async (summary) => {
      await poster.flush();
      return summary;
    });
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await training?.catch(() => undefined);
    await stack?.close();
  });

  it("refuses a wrong key and shows nothing behind the login", async () => {
    await browser.clearCookies();
    const page = await browser.newPage();
    await page.goto(`${stack.gateway.url}/ui/`);
    await page.fill("input[name=key]", "not-the-key");
    await page.click("button[type=submit]");
    await page.waitForSelector("#login-error");
    expect(await page.textContent("#login-error")).toBe("Wrong key");
    expect(await page.$("header")).toBeNull();
    const api = await page.evaluate(async () => (await fetch("/api/runs")).status);
    expect(api).toBe(401);
    await page.screenshot({ path: join(SHOTS, "login-refused.png") });
    await page.close();
  });

  it("logs in, and the run's curves grow without a reload", async () => {
    const page = await loggedIn();
    await page.waitForSelector('.chart[data-metric="reward/mean"]', { timeout: 60_000 });
    const seen = await points(page, "reward/mean");
    expect(seen).toBeGreaterThanOrEqual(1);
    expect(seen).toBeLessThan(TOTAL_STEPS);
    const navigations: string[] = [];
    page.on("framenavigated", (frame) => navigations.push(frame.url()));
    await page.waitForFunction(`${POINTS_JS} > ${seen}`, undefined, { timeout: 90_000 });
    expect(navigations).toEqual([]);
    await training;
    await page.waitForFunction(`${POINTS_JS} === ${TOTAL_STEPS}`, undefined, { timeout: 30_000 });
    expect(await page.textContent('.run-badge[data-run="live"]')).toContain(`step ${TOTAL_STEPS} / ${TOTAL_STEPS}`);
    await page.close();
  }, 180_000);

  it("compares two runs: each chart draws one line per run", async () => {
    await training;
    await stack.gateway.call("PUT", "/api/runs/baseline", { total_steps: 3 });
    const steps = [1, 2, 3].map((step) => ({ step, "reward/mean": step / 10, entropy: 5.5 }));
    await stack.gateway.call("POST", "/api/runs/baseline/steps", steps);
    const page = await loggedIn();
    await page.waitForSelector('.chart[data-metric="reward/mean"]');
    await page.selectOption("#run-select", "live");
    await page.selectOption("#compare-select", "baseline");
    await page.waitForSelector(`.chart[data-metric="reward/mean"][data-points="${TOTAL_STEPS},3"]`);
    // The chart is rebuilt for the new set of runs in an effect after the render that sets data-points: wait for it.
    const legendRows = `document.querySelectorAll('.chart[data-metric="reward/mean"] .u-legend .u-series').length`;
    await page.waitForFunction(`${legendRows} === 3`, undefined, { timeout: 10_000 }); // step + two runs
    expect(await page.evaluate(legendRows)).toBe(3);
    await page.screenshot({ path: join(SHOTS, "runs.png") });
    await page.close();
  }, 60_000);

  it("filters rollouts server-side (step, split, state) and shows a new rollout without a reload", async () => {
    await training;
    const page = await loggedIn();
    await page.goto(`${stack.gateway.url}/ui/#/rollouts`);
    await page.waitForSelector("#rollout-count");
    const all = await page.textContent("#rollout-count");
    await page.fill("input[name=step]", "2");
    await page.selectOption("select[name=is_train]", "true");
    await page.click("form.filters button[type=submit]");
    await page.waitForFunction(`${COUNT_JS} !== ${JSON.stringify(all)}`);
    // Step 2 launched train_batch_size (2) groups of n (2) rollouts.
    expect(await page.textContent("#rollout-count")).toBe("1–4 of 4");
    const steps = await page.$$eval("table.rollouts tbody tr td:nth-child(4)", (cells) =>
      cells.map((c) => c.textContent),
    );
    expect(steps).toEqual(["2", "2", "2", "2"]);
    expect(page.url()).toContain("step=2");
    await page.screenshot({ path: join(SHOTS, "rollouts.png"), fullPage: true });
    // Live: a rollout created now appears in the open table (step 2 filter) without a reload.
    await stack.gateway.call("POST", "/api/rollouts", [
      { rollout_id: "live-late-0", input: { data_id: "late" }, is_train: true, metadata: { batch_idx: 2 } },
    ]);
    await page.waitForFunction(`${COUNT_JS} === "1–5 of 5"`, undefined, { timeout: 20_000 });
    await stack.gateway.call("DELETE", "/api/rollouts/live-late-0");
    await page.selectOption("select[name=state]", "failed");
    await page.click("form.filters button[type=submit]");
    await page.waitForFunction(`${COUNT_JS} === "no rollouts"`);
    await page.close();
  }, 120_000);

  it("opens a trained rollout and reads a token's logprob on hover", async () => {
    await training;
    const page = await loggedIn();
    await page.goto(`${stack.gateway.url}/ui/#/rollouts?run=live&step=1`);
    await page.click("table.rollouts tbody tr:first-child a");
    await page.waitForSelector(".call .tok.response");
    const rolloutId = decodeURIComponent(page.url().split("#/rollout/")[1] ?? "");
    const events = (await (await stack.gateway.call("GET", `/api/rollouts/${rolloutId}/events`)).json()) as {
      event_type: string;
      data: { response: { choices: { logprobs: { content: { logprob: number }[] } }[] } };
    }[];
    const firstCall = events.find((e) => e.event_type === "model_request");
    const recorded = firstCall?.data.response.choices[0]?.logprobs.content[0]?.logprob as number;
    expect(typeof recorded).toBe("number");
    await page.hover(".call:first-of-type .tok.response >> nth=0");
    await page.waitForSelector(".tok-tip");
    expect(await page.textContent(".tok-tip")).toContain(`logprob ${recorded.toFixed(4)}`);
    await page.screenshot({ path: join(SHOTS, "rollout.png"), fullPage: true });
    await page.close();
  }, 120_000);

  it("outlines a seeded merge mismatch at its first differing token", async () => {
    const page = await loggedIn();
    await page.goto(`${stack.gateway.url}/ui/#/rollout/seeded-mismatch`);
    await page.waitForSelector("#mismatch-list");
    expect(await page.textContent("#mismatch-list")).toContain("departs from row at token 4");
    const marked = await page.$$eval(".call .tok.mark", (els) => els.map((el) => el.getAttribute("data-i")));
    expect(marked).toEqual(["4"]);
    expect(await page.$$eval(".row", (rows) => rows.length)).toBe(2);
    // Prompt ids with no recorded text are decoded through the engine's /detokenize (via the gateway).
    await page.waitForFunction(`document.querySelector(".call .tok.mark")?.textContent !== "⟨99⟩"`);
    await page.hover(".call .tok.mark");
    expect(await page.textContent(".tok-tip")).toContain("id 99 · prompt · merge break");
    await page.screenshot({ path: join(SHOTS, "rollout-mismatch.png"), fullPage: true });
    await page.close();
  }, 60_000);
});
