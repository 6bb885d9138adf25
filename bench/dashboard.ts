/**
 * @module Dashboard figures in Debian's Chromium (Performance API marks set by the page): time to first render of the
 * rollouts page with 100k rollouts in a SQLite store (cold: the gateway builds its summary index on that request;
 * warm: a second load), the server time of a filtered page, and the trace viewer's render of a 32k-token trace.
 * Run: `npx tsx bench/dashboard.ts [rollouts=100000]` (needs /usr/bin/chromium and a built UI, `npm run build`).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { buildApp } from "../src/gateway/app.js";
import { gatewayConfig } from "../src/gateway/config.js";
import { type FixtureCall, seedTraceRollout } from "../src/gateway/testing/trace-fixture.js";
import { SqliteStore } from "../src/store/sqlite.js";
import { launchChromium } from "../src/testing/chromium.js";

const ROLLOUTS = Number(process.argv[2] ?? 100_000);
const TERMINAL_EVERY = 1; // every rollout terminal with a reward event, as in a long finished run
const BATCH = 2000;
const TRACE_PROMPT = 8192;
const TRACE_RESPONSE = 24_576;

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

/** 100k rollouts of a run `bench`, steps of 64, every one terminal with a reward. */
async function seedRollouts(store: SqliteStore): Promise<void> {
  for (let start = 0; start < ROLLOUTS; start += BATCH) {
    const ids = Array.from({ length: Math.min(BATCH, ROLLOUTS - start) }, (_, k) => start + k);
    await store.createRollouts(
      ids.map((i) => ({
        rollout_id: `bench-s${Math.floor(i / 64)}-${i}`,
        input: { data_id: `d${i % 500}`, prompt: "x".repeat(200) },
        is_train: i % 10 !== 0,
        config: { timeout_seconds: 60, max_attempts: 1, local: null, k8s: null },
        metadata: { batch_idx: Math.floor(i / 64), sample_idx_in_batch: i % 64 },
      })),
    );
    await Promise.all(
      ids
        .filter((i) => i % TERMINAL_EVERY === 0)
        .map(async (i) => {
          const id = `bench-s${Math.floor(i / 64)}-${i}`;
          await store.patchRollout(id, { status: { state: "running" } });
          await store.appendEvents(id, "0", [{ event_type: "reward", data: { value: (i % 100) / 100 } }]);
          await store.patchRollout(id, { status: { state: i % 17 === 0 ? "failed" : "succeeded" } });
        }),
    );
  }
}

/** One call of TRACE_PROMPT + TRACE_RESPONSE tokens with texts from a 400-word vocabulary. */
function bigCall(): FixtureCall {
  const words = Array.from({ length: 400 }, (_, k) => (k % 23 === 0 ? "\n" : ` w${k.toString(36)}`));
  const responseIds = Array.from({ length: TRACE_RESPONSE }, (_, i) => 1000 + ((i * 7919) % 400));
  return {
    promptIds: Array.from({ length: TRACE_PROMPT }, (_, i) => 1000 + ((i * 104729) % 400)),
    responseIds,
    texts: responseIds.map((id) => words[id - 1000] as string),
    logprobs: responseIds.map((_, i) => -((i * 0.37) % 6)),
  };
}

/** Opens `hash` in a fresh page (cookie kept) and waits for the mark; returns its time since navigation start (ms). */
async function markAfterLoad(page: Page, url: string, mark: string): Promise<number> {
  await page.goto("about:blank"); // a real page load each time, not a same-document hash change
  await page.goto(url);
  await page.waitForFunction(`performance.getEntriesByName(${JSON.stringify(mark)}).length > 0`, undefined, {
    timeout: 120_000,
  });
  return page.evaluate(`performance.getEntriesByName(${JSON.stringify(mark)})[0].startTime`) as Promise<number>;
}

const dir = mkdtempSync(join(tmpdir(), "arclight-bench-dashboard-"));
const store = SqliteStore.open(join(dir, "gateway.db"));
console.log(`setup: ${cpus().length} cores, ${ROLLOUTS} rollouts (all terminal, each with a reward event), SQLite`);
let t0 = performance.now();
await seedRollouts(store);
await seedTraceRollout(store, "trace-32k", [bigCall()], 1);
console.log(`seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s; load avg ${load()}`);

const app = buildApp({ store, config: gatewayConfig({ key: "bench-key", store: "sqlite:x" }) });
const url = await app.listen({ host: "127.0.0.1", port: 0 });
const browser = await launchChromium();
try {
  const page = await browser.newPage();
  await page.goto(`${url}/ui/`);
  await page.fill("input[name=key]", "bench-key");
  await page.click("button[type=submit]");
  await page.waitForSelector("header");

  const cold = await markAfterLoad(page, `${url}/ui/#/rollouts`, "arclight:rollouts-rendered");
  console.log(
    `rollouts page, first render, cold index (${ROLLOUTS} rows read from SQLite): ${cold.toFixed(0)} ms; load avg ${load()}`,
  );
  const warm: number[] = [];
  for (let k = 0; k < 5; k += 1)
    warm.push(await markAfterLoad(page, `${url}/ui/#/rollouts?k=${k}`, "arclight:rollouts-rendered"));
  warm.sort((a, b) => a - b);
  console.log(`rollouts page, first render, warm (median of 5 loads): ${warm[2]?.toFixed(0)} ms; load avg ${load()}`);

  const filter = "state=succeeded&is_train=true&reward_min=0.25&reward_max=0.5&offset=5000&limit=50";
  const times: number[] = [];
  for (let k = 0; k < 10; k += 1) {
    t0 = performance.now();
    const res = await fetch(`${url}/api/dashboard/rollouts?${filter}`, {
      headers: { authorization: "Bearer bench-key" },
    });
    await res.json();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  console.log(
    `filtered page over ${ROLLOUTS} (state+split+reward range, offset 5000), median of 10: ${times[5]?.toFixed(1)} ms`,
  );

  const traceTimes: { render: number; total: number }[] = [];
  for (let k = 0; k < 3; k += 1) {
    const total = await markAfterLoad(page, `${url}/ui/#/rollout/trace-32k?k=${k}`, "arclight:trace-rendered");
    const render = (await page.evaluate(`performance.getEntriesByName("arclight:trace-render")[0].duration`)) as number;
    traceTimes.push({ render, total });
  }
  traceTimes.sort((a, b) => a.render - b.render);
  const mid = traceTimes[1] as { render: number; total: number };
  console.log(
    `trace viewer, ${TRACE_PROMPT + TRACE_RESPONSE}-token call (+ its training row), median of 3: ` +
      `events received -> rendered ${mid.render.toFixed(0)} ms, navigation -> rendered ${mid.total.toFixed(0)} ms; load avg ${load()}`,
  );
  await page.screenshot({ path: join(dir, "trace-32k.png") });
  console.log(`screenshot: ${join(dir, "trace-32k.png")}`);
} finally {
  await browser.close();
  await app.close();
  await store.close();
  rmSync(join(dir, "gateway.db"), { force: true });
}
