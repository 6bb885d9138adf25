/**
 * @module One metric chart (uPlot): a line per run against the step, drag to zoom, double-click to reset. New points
 * arrive through props and are drawn with `setData`, so a live run does not rebuild the chart.
 */
import { html } from "htm/preact";
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { tickLabels } from "./axis-labels.js";

/** One line: a run's values of the metric, by step. */
export interface ChartSeries {
  label: string;
  color: string;
  points: readonly [number, number | null][];
}

/** Aligns several series on the union of their steps (uPlot wants one x array). */
export function alignSeries(series: readonly ChartSeries[]): uPlot.AlignedData {
  const steps = [...new Set(series.flatMap((s) => s.points.map(([x]) => x)))].sort((a, b) => a - b);
  const columns = series.map((s) => {
    const byStep = new Map(s.points);
    return steps.map((x) => byStep.get(x) ?? null);
  });
  return [steps, ...columns] as uPlot.AlignedData;
}

/** A chart card. */
export function Chart(props: { title: string; series: ChartSeries[]; widthPx?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const labels = props.series.map((s) => s.label).join("|");
  useEffect(() => {
    if (!box.current) return;
    const options: uPlot.Options = {
      width: props.widthPx ?? Math.max(240, box.current.clientWidth),
      height: 190,
      cursor: { drag: { x: true, y: false } },
      legend: { show: true },
      scales: {
        x: { time: false },
        // A flat series (all zeros) gets a ±1 band instead of uPlot's default 0–100.
        y: { range: (_u, min, max) => (min === max ? [min - 1, max + 1] : uPlot.rangeNum(min, max, 0.1, true)) },
      },
      series: [
        { label: "step" },
        ...props.series.map((s) => ({ label: s.label, stroke: s.color, width: 2, spanGaps: true })),
      ],
      // Steps are whole numbers: no ticks at 1.5.
      // Value ticks carry the digits their step needs: a kl of 1e-5 reads 1e-5, not 0 or -0.
      axes: [
        { size: 30, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000] },
        { size: 50, values: (_u, ticks, _axis, _space, step) => tickLabels(ticks, step) },
      ],
    };
    plot.current = new uPlot(options, alignSeries(props.series), box.current);
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
  }, [labels]);
  useEffect(() => {
    plot.current?.setData(alignSeries(props.series));
  }, [props.series]);
  const lastPoints = props.series.map((s) => s.points.length).join(",");
  return html`<div class="chart" data-metric=${props.title} data-points=${lastPoints}>
    <div class="chart-title">${props.title}</div>
    <div ref=${box}></div>
  </div>`;
}
