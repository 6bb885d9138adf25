/**
 * @module What building an object costs on this Node, ns per object: a spread followed by properties
 * (`{ ...base, a, b }`), against the same object with its fields named and against `Object.assign` (figures:
 * docs/benchmarks.md, Object spread). The proxy's hot path builds its objects without a leading spread
 * (`src/gateway/proxy/serve-call.ts`, `call-request.ts`, `stream-relay.ts`, the request logger's bindings in `app.ts`).
 * Rounds alternate between the shapes so machine load hits them alike; the median round is printed.
 */
import { availableParallelism, loadavg } from "node:os";
import { performance } from "node:perf_hooks";

const ROUNDS = 7;
const OBJECTS = 100_000;

/** A call's base as `forwardCall` held it: the same shape every call, fresh values. */
interface Base {
  kind: string;
  model: string;
  request: unknown;
  requestText: string;
  startedAt: number;
}

const bases: Base[] = Array.from({ length: 64 }, (_, i) => ({
  kind: "chat",
  model: "policy",
  request: JSON.parse('{"model":"agent","messages":[{"role":"user","content":"hi"}],"max_tokens":4}'),
  requestText: "{}",
  startedAt: i,
}));

/** The record's eight fields beyond the base, as one object (what `Object.assign` copies from). */
function callFields(i: number): object {
  return {
    endpoint: null,
    response: null,
    error: null,
    latencyMs: i,
    httpStatus: 200,
    retryCount: 0,
    captureIncomplete: false,
    captureReasons: [],
  };
}

/**
 * The shapes measured: each builds one object from `base` and `i`. The spread and named shapes spell their fields out
 * in the literal on purpose: the literal's shape is what is measured.
 */
const SHAPES: Record<string, (base: Base, i: number) => object> = {
  "{ ...base } alone": (base) => ({ ...base }),
  "{ ...base, 1 property }": (base, i) => ({ ...base, latencyMs: i }),
  "{ ...base, 8 properties } (the call record)": (base, i) => ({
    ...base,
    endpoint: null,
    response: null,
    error: null,
    latencyMs: i,
    httpStatus: 200,
    retryCount: 0,
    captureIncomplete: false,
    captureReasons: [],
  }),
  "the same 13 fields named": (base, i) => ({
    kind: base.kind,
    model: base.model,
    request: base.request,
    requestText: base.requestText,
    startedAt: base.startedAt,
    endpoint: null,
    response: null,
    error: null,
    latencyMs: i,
    httpStatus: 200,
    retryCount: 0,
    captureIncomplete: false,
    captureReasons: [],
  }),
  "Object.assign({}, base, { 8 properties })": (base, i) => Object.assign({}, base, callFields(i)),
  "{ 7 properties, ...optional } (spread last)": (base, i) => ({
    event_type: "model_request",
    rollout_id: "r",
    attempt_id: "a",
    timestamp: i,
    data: base.request,
    sequence: i,
    event_id: null,
    ...(i < 0 ? { late: true } : {}),
  }),
};

/** @returns ns per object of `build` over {@link OBJECTS} objects */
function nsPerObject(build: (base: Base, i: number) => object): number {
  let kept = 0;
  const started = performance.now();
  for (let i = 0; i < OBJECTS; i++) if (build(bases[i & 63]!, i) !== null) kept++;
  const ns = ((performance.now() - started) * 1e6) / OBJECTS;
  if (kept < 0) throw new Error("unreachable: keeps the objects observable");
  return ns;
}

const samples = new Map<string, number[]>(Object.keys(SHAPES).map((name) => [name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, build] of Object.entries(SHAPES)) samples.get(name)!.push(nsPerObject(build));
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  `setup: ${availableParallelism()} cores, load average ${loadavg()[0]!.toFixed(2)}, node ${process.version}, ` +
    `${ROUNDS} rounds of ${OBJECTS} objects per shape, median round`,
);
for (const [name, ns] of samples) console.log(`${median(ns).toFixed(0).padStart(7)} ns  ${name}`);
