/**
 * @module The runs page: the runs the gateway knows, one chart per metric for the chosen run (and a second run to
 * compare), updated live from the `steps` events of the feed.
 */
import { html } from "htm/preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { getJson, openStream } from "./api.js";
import { Chart, type ChartSeries } from "./chart.js";
import type { RunRecord, RunStep, RunSummary } from "./wire.js";

/** Metrics shown first, in this order; every other numeric metric follows alphabetically. */
const PREFERRED = [
  "reward/mean",
  "val/reward_mean",
  "entropy",
  "kl",
  "clip_fraction",
  "grad_norm",
  "tokens_per_s",
  "staleness/max",
  "staleness/mean",
  "mismatches",
  "loss",
  "time/step_s",
];
const COLORS = ["#2563eb", "#dc2626"];

/** Adds `tokens_per_s` (tokens / time/step_s) to a step that has both. */
function withDerived(step: RunStep): RunStep {
  const tokens = step.tokens;
  const seconds = step["time/step_s"];
  if (typeof tokens === "number" && typeof seconds === "number" && seconds > 0) {
    return { ...step, tokens_per_s: tokens / seconds };
  }
  return step;
}

/** Metric keys of the loaded runs, preferred ones first. */
function metricKeys(runs: readonly RunRecord[]): string[] {
  const present = new Set<string>();
  for (const run of runs) for (const step of run.metrics) for (const key of Object.keys(step)) present.add(key);
  present.delete("step");
  const first = PREFERRED.filter((k) => present.has(k));
  const rest = [...present].filter((k) => !PREFERRED.includes(k)).sort();
  return [...first, ...rest];
}

/** A run's steps with `steps` applied: a step already there is replaced, new ones are added, in step order. */
function mergeByStep(metrics: readonly RunStep[], steps: readonly RunStep[]): RunStep[] {
  const byStep = new Map<number, RunStep>(metrics.map((m) => [m.step as number, m]));
  for (const step of steps) byStep.set(step.step as number, withDerived(step));
  return [...byStep.values()].sort((a, b) => (a.step as number) - (b.step as number));
}

/** The page. */
export function RunsPage() {
  const [runs, setRuns] = useState<RunSummary[]>([]);
  const [chosen, setChosen] = useState<string | null>(null);
  const [compare, setCompare] = useState<string | null>(null);
  const [records, setRecords] = useState<Record<string, RunRecord>>({});
  const [error, setError] = useState<string | null>(null);

  const loadRuns = () =>
    getJson<{ runs: RunSummary[] }>("/api/runs")
      .then((body) => {
        setRuns(body.runs);
        setChosen((current) => current ?? body.runs[0]?.name ?? null);
      })
      .catch((err: Error) => setError(err.message));
  // Steps that arrive on the feed while a run's record is being fetched: the fetched snapshot may predate them, so
  // they are applied on top of it (else a step posted during the fetch would be missing until a reload).
  const early = useRef(new Map<string, RunStep[]>());
  // The records as last rendered, for the feed's handlers (registered once).
  const shown = useRef(records);
  shown.current = records;
  const loadRun = (name: string) => {
    if (!early.current.has(name)) early.current.set(name, []);
    return getJson<RunRecord>(`/api/runs/${encodeURIComponent(name)}`).then(
      (run) => {
        const during = early.current.get(name) ?? [];
        early.current.delete(name);
        setRecords((all) => ({
          ...all,
          [name]: { ...run, metrics: mergeByStep(run.metrics.map(withDerived), during) },
        }));
      },
      (err: unknown) => {
        early.current.delete(name);
        throw err;
      },
    );
  };

  useEffect(() => {
    void loadRuns();
    return openStream({
      run: () => void loadRuns(),
      steps: (data) => {
        const { run, steps } = data as { run: string; steps: RunStep[] };
        early.current.get(run)?.push(...steps);
        setRecords((all) => {
          const record = all[run];
          if (!record) return all;
          const first = (steps[0]?.step as number) ?? Number.POSITIVE_INFINITY;
          const kept = record.metrics.filter((m) => (m.step as number) < first);
          return { ...all, [run]: { ...record, metrics: [...kept, ...steps.map(withDerived)] } };
        });
      },
      // After the feed dropped and the browser reconnected, what was posted meanwhile was never sent: fetch again.
      reopened: () => {
        void loadRuns();
        for (const name of Object.keys(shown.current)) void loadRun(name).catch(() => {});
      },
    });
  }, []);
  useEffect(() => {
    for (const name of [chosen, compare]) if (name && !records[name]) void loadRun(name).catch(() => {});
  }, [chosen, compare]);

  const shownRuns = [chosen, compare].flatMap((name) => (name && records[name] ? [records[name]] : []));
  const keys = useMemo(() => metricKeys(shownRuns), [shownRuns]);
  const seriesOf = (key: string): ChartSeries[] =>
    shownRuns.map((run, k) => ({
      label: run.name,
      color: COLORS[k] as string,
      points: run.metrics.flatMap((m) =>
        key in m ? [[m.step as number, m[key] ?? null] as [number, number | null]] : [],
      ),
    }));

  return html`<section>
    <h2>Runs</h2>
    ${error ? html`<p class="error">${error}</p>` : null}
    ${runs.length === 0 ? html`<p class="muted">No runs yet: <code>arclight train</code> and <code>arclight demo</code> post theirs here.</p>` : null}
    <div class="run-pickers">
      <label>Run <select id="run-select" value=${chosen ?? ""} onChange=${(e: Event) => setChosen((e.target as HTMLSelectElement).value)}>
        ${runs.map((r) => html`<option value=${r.name}>${r.name}</option>`)}
      </select></label>
      <label>Compare with <select id="compare-select" value=${compare ?? ""} onChange=${(e: Event) => setCompare((e.target as HTMLSelectElement).value || null)}>
        <option value="">(none)</option>
        ${runs.filter((r) => r.name !== chosen).map((r) => html`<option value=${r.name}>${r.name}</option>`)}
      </select></label>
      ${shownRuns.map(
        (run) =>
          html`<span class="run-badge" data-run=${run.name}>${run.name}: step ${run.metrics.at(-1)?.step ?? "–"}${run.total_steps ? ` / ${run.total_steps}` : ""}</span>`,
      )}
      ${chosen ? html`<a href=${`#/rollouts?run=${encodeURIComponent(chosen)}`}>rollouts of ${chosen} →</a>` : null}
    </div>
    <div class="charts">${keys.map((key) => html`<${Chart} key=${key} title=${key} series=${seriesOf(key)} />`)}</div>
  </section>`;
}
