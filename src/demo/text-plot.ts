/** @module Reward curves as a terminal character chart. */
import type { Curve } from "./svg-plot.js";

/** Chart size in characters. */
export interface TextPlotOptions {
  /** Plot columns (steps are spread over them); default 60. */
  width?: number;
  /** Plot rows between y = 0 and the top; default 10. */
  height?: number;
}

/** Curves on a character grid, y from 0 to max(1, largest), legend below; no trailing newline. */
export function renderTextPlot(curves: readonly (Curve & { marker: string })[], options: TextPlotOptions = {}): string {
  const width = options.width ?? 60;
  const height = options.height ?? 10;
  const all = curves.flatMap((c) => c.points);
  const xMin = all.length > 0 ? Math.min(...all.map((p) => p.step)) : 0;
  const xMax = Math.max(xMin + 1, ...all.map((p) => p.step));
  const yMax = Math.max(1, ...all.map((p) => p.value));
  const grid = Array.from({ length: height + 1 }, () => Array.from({ length: width }, () => " "));
  for (const curve of curves) {
    for (const p of curve.points) {
      const col = Math.round(((p.step - xMin) / (xMax - xMin)) * (width - 1));
      const row = height - Math.round((Math.max(0, p.value) / yMax) * height);
      const line = grid[row];
      if (line !== undefined) line[col] = curve.marker;
    }
  }
  const lines = grid.map((cells, row) => {
    const value = ((height - row) / height) * yMax;
    const label = row % Math.max(1, Math.floor(height / 4)) === 0 || row === height ? value.toFixed(2) : "";
    return `${label.padStart(6)} |${cells.join("")}`;
  });
  lines.push(`${" ".repeat(6)} +${"-".repeat(width)}`);
  const xLabels = `${String(xMin)}${String(xMax).padStart(width - String(xMin).length)}`;
  lines.push(`${" ".repeat(8)}${xLabels}  step`);
  lines.push(`${" ".repeat(8)}${curves.map((c) => `${c.marker} ${c.label}`).join("   ")}`);
  return lines.join("\n");
}
