/**
 * @module APO rounds per minute, measured: `arclight apo` as a user runs it (CLI child process with its own gateway
 * child and local controller, the calculator agent as real child processes) against a scripted optimiser on loopback
 * that always answers valid critiques and edits instantly, and the prompt-sensitive scripted policy
 * (src/apo/testing/prompt-sensitive-policy.ts). The figure is therefore the cost of arclight's side of a round (the
 * rollouts through gateway and controller, the bookkeeping): a real optimiser LLM adds its own latency per call
 * (2 calls per beam prompt per round). Prints the CLI's output, rounds/min, the phase split and the load average.
 * Sizes: `node --import tsx bench/apo.ts [ROUNDS] [VAL_SIZE] [MINIBATCH] [POOL]`.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import type { HistoryRecord } from "../src/apo/history.js";
import { EDIT_MARK } from "../src/apo/optimiser-messages.js";
import { startChatServer, systemText } from "../src/apo/testing/chat-server.js";
import { startPromptSensitivePolicy } from "../src/apo/testing/prompt-sensitive-policy.js";
import { calculatorAgentCommand, isDemoProblem } from "../src/demo/settings.js";
import { runProcess } from "../src/testing/run-process.js";
import { readJsonl } from "../src/trainer/data-order.js";

const [rounds, valSize, minibatch, pool] = [4, 8, 4, 8].map((fallback, i) =>
  Number(process.argv[2 + i] ?? fallback),
) as [number, number, number, number];
const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const TSX = import.meta.resolve("tsx");
const DATA = fileURLToPath(new URL("../examples/calculator/data/", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "arclight-bench-apo-"));
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");

const items = readJsonl(join(DATA, "train.jsonl")).filter(isDemoProblem).slice(0, 200);
const inputs = items.map((item) => item.input as { question: string; answer: number });
const write = (name: string, rows: unknown[]) =>
  writeFileSync(join(dir, name), rows.map((r) => `${JSON.stringify(r)}\n`).join(""));
write("train.jsonl", inputs.slice(0, 100));
write("val.jsonl", inputs.slice(100));

const policy = await startPromptSensitivePolicy(new Map(inputs.map((i) => [i.question, i.answer])));
/** Edits that improve the prompt in the first two rounds (format, then checking), then distinct variants. */
let edits = 0;
const optimiser = await startChatServer((request) => {
  if (!systemText(request).startsWith(EDIT_MARK)) return { content: "The answers lack an ANSWER: line or a check." };
  const base = ["Reply with ANSWER: <number>.", "Reply with ANSWER: <number>. Check the arithmetic."][
    Math.min(edits, 1)
  ];
  const prompts = [0, 1].map((k) => `${base} (variant ${edits}.${k})`);
  edits += 1;
  return { content: JSON.stringify({ prompts }) };
});
const config = {
  name: "bench-apo",
  prompt: { env: "CALC_SYSTEM_PROMPT", initial: "You are a calculator." },
  data: { train_path: "train.jsonl", val_path: "val.jsonl", val_size: valSize },
  agent: {
    command: calculatorAgentCommand(),
    env_map: { QUESTION: "input.question", ANSWER: "input.answer" },
    pool_size: pool,
  },
  rollout_timeout_seconds: 120,
  policy: { endpoint: policy.url },
  optimiser: { base_url: optimiser.url, model: "scripted", api_key_env: "BENCH_OPTIMISER_KEY" },
  search: { rounds, beam_width: 2, branch_factor: 2, minibatch_size: minibatch, patience: rounds },
};
writeFileSync(join(dir, "apo.yaml"), stringify(config));
console.log(
  `apo.yaml (command: npx arclight apo apo.yaml):\n${stringify(config).replaceAll(process.execPath, "node")}`,
);

console.log(
  `setup: ${cpus().length} cores, agent pool ${pool}, ${rounds} rounds, beam 2 x branch 2, minibatch ${minibatch}, ` +
    `val ${valSize} (${2 * minibatch + 4 * valSize} rollouts a round)`,
);
console.log(`load average before: ${load()}`);
const started = performance.now();
const result = await runProcess([process.execPath, "--import", TSX, MAIN, "apo", "apo.yaml"], {
  cwd: dir,
  env: { ...process.env, BENCH_OPTIMISER_KEY: "none" },
});
const wallS = (performance.now() - started) / 1000;
console.log(`load average after: ${load()}`);
process.stdout.write(result.stdout.replaceAll(dir, "DIR"));
if (result.code !== 0) {
  console.error(result.stderr);
  process.exitCode = 1;
} else {
  const history = readFileSync(join(dir, "runs", "bench-apo", "history.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as HistoryRecord);
  const best = readFileSync(join(dir, "runs", "bench-apo", "best-prompt.txt"), "utf8").trim();
  console.log(`best-prompt.txt: ${best}`);
  const done = history.filter((r): r is Extract<HistoryRecord, { type: "round" }> => r.type === "round");
  const sum = (key: keyof (typeof done)[number]["timings"]) => done.reduce((t, r) => t + r.timings[key], 0);
  const roundS = sum("round_s");
  console.log(
    `rounds/min: ${((done.length * 60) / roundS).toFixed(2)} (${done.length} rounds in ${roundS.toFixed(1)} s; ` +
      `whole command ${wallS.toFixed(1)} s with start-up and the starting prompt's scoring)`,
  );
  console.log(
    `time split: minibatch rollouts ${((100 * sum("minibatch_s")) / roundS).toFixed(0)}%, optimiser ` +
      `${((100 * sum("optimiser_s")) / roundS).toFixed(0)}% (scripted, instant), validation scoring ` +
      `${((100 * sum("scoring_s")) / roundS).toFixed(0)}%`,
  );
}
rmSync(dir, { recursive: true, force: true });
await policy.close();
await optimiser.close();
