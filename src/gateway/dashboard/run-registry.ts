/**
 * @module The training runs a gateway knows: each run's config and step metrics, kept in memory (a restarted gateway
 * starts empty; the trainer re-posts on its next step), with listeners told of every change (the dashboard's SSE).
 */
import { NotFound, type RunPut, type RunRecord, type RunStep, type RunSummary } from "../../protocol/index.js";

/** A change listeners hear about: a run created or reconfigured, or new steps of a run. */
export type RunChange = { kind: "run"; run: RunSummary } | { kind: "steps"; run: string; steps: RunStep[] };

/** Largest number of runs kept; the run updated longest ago is forgotten first. */
const MAX_RUNS = 200;

/** Runs by name, with change listeners. */
export class RunRegistry {
  private readonly runs = new Map<string, RunRecord>();
  private readonly listeners = new Set<(change: RunChange) => void>();

  /**
   * Creates a run or replaces its config and planned length (its steps are kept).
   * @param name - the run name (validated by the route)
   * @param put - config and `total_steps`
   * @returns the run's summary
   */
  upsert(name: string, put: RunPut, nowS = Date.now() / 1000): RunSummary {
    const existing = this.runs.get(name);
    const run: RunRecord = existing ?? {
      name,
      config: {},
      total_steps: null,
      steps: 0,
      last_step: null,
      created_at: nowS,
      updated_at: nowS,
      metrics: [],
    };
    run.config = put.config;
    run.total_steps = put.total_steps;
    run.updated_at = nowS;
    this.runs.delete(name);
    this.runs.set(name, run);
    if (this.runs.size > MAX_RUNS) this.runs.delete(this.runs.keys().next().value as string);
    const summary = summaryOf(run);
    this.emit({ kind: "run", run: summary });
    return summary;
  }

  /**
   * Adds step metrics to a run. A step number already present replaces that step and drops every later one (a
   * resumed run re-posts from its checkpoint), so `metrics` stays in step order.
   * @param name - the run
   * @param steps - step records, each with an integer `step`
   * @returns the run's summary after the append
   * @throws {NotFound} when the run was never created (PUT it first)
   */
  appendSteps(name: string, steps: readonly RunStep[], nowS = Date.now() / 1000): RunSummary {
    const run = this.runs.get(name);
    if (!run) throw new NotFound(`Run ${name} not found`);
    for (const step of steps) {
      const at = run.metrics.findIndex((m) => (m.step as number) >= (step.step as number));
      if (at >= 0) run.metrics.length = at;
      run.metrics.push(step);
    }
    run.steps = run.metrics.length;
    run.last_step = (run.metrics.at(-1)?.step as number | undefined) ?? null;
    run.updated_at = nowS;
    this.emit({ kind: "steps", run: name, steps: [...steps] });
    return summaryOf(run);
  }

  /** @returns every run's summary, most recently updated first */
  list(): RunSummary[] {
    return [...this.runs.values()].map(summaryOf).sort((a, b) => b.updated_at - a.updated_at);
  }

  /** @returns the run with its metrics, or undefined when unknown */
  get(name: string): RunRecord | undefined {
    const run = this.runs.get(name);
    return run ? { ...summaryOf(run), metrics: [...run.metrics] } : undefined;
  }

  /**
   * Registers a listener of every later change.
   * @returns a function that removes the listener
   */
  subscribe(listener: (change: RunChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(change: RunChange): void {
    for (const listener of this.listeners) listener(change);
  }
}

/** The summary fields of a run record. */
function summaryOf(run: RunRecord): RunSummary {
  const { metrics: _metrics, ...summary } = run;
  return { ...summary };
}
