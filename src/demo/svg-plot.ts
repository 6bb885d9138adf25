/** @module Reward curves as a standalone SVG line chart, written by hand (no plotting package). */

/** One point of a curve: x is the training step, y the reward. */
export interface CurvePoint {
  step: number;
  value: number;
}

/** One named curve. */
export interface Curve {
  label: string;
  /** CSS colour of the line and its legend swatch. */
  color: string;
  points: readonly CurvePoint[];
  /** Draw a dot at each point (for sparse curves such as validation). */
  dots?: boolean;
}

/** Plot size and titles. */
export interface PlotOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  /** Whole picture (px); default 720 × 420. */
  widthPx?: number;
  heightPx?: number;
}

const MARGIN = { left: 64, right: 24, top: 48, bottom: 52 };

/** Escapes text for an SVG text node or attribute. */
function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** About five round tick values covering [min, max] (steps of 1, 2 or 5 × 10^k). */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!(max > min)) return [min];
  const raw = (max - min) / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * magnitude >= raw) ?? 10) * magnitude;
  const ticks: number[] = [];
  for (let t = Math.ceil(min / step) * step; t <= max + step * 1e-9; t += step) ticks.push(Number(t.toFixed(10)));
  return ticks;
}

/** Formats a tick value without float noise (0.30000000000000004 → "0.3"). */
function tickText(value: number): string {
  return String(Number(value.toPrecision(6)));
}

/** Width of a character of the 12 px sans-serif labels, px: a wide average, so estimated text is never too short. */
export const LABEL_CHAR_PX = 7.2;
/** Space inside the legend box, each side, px; the swatch and its gap to the label. */
const LEGEND_PAD_PX = 8;
const SWATCH_PX = 30;

/** The legend box in the plot's top right, as wide as its longest label needs; never left of `minX`. */
function legendBox(curves: readonly Curve[], width: number, minX: number): { x: number; width: number } {
  const longest = Math.max(0, ...curves.map((c) => c.label.length));
  const boxWidth = 2 * LEGEND_PAD_PX + SWATCH_PX + longest * LABEL_CHAR_PX;
  const x = Math.max(minX, width - MARGIN.right - 8 - boxWidth);
  return { x, width: Math.min(boxWidth, width - MARGIN.right - 8 - x) };
}

/** An SVG line chart: y from 0 to at least 1; empty curves appear only in the legend. */
export function renderSvgPlot(curves: readonly Curve[], options: PlotOptions): string {
  const width = options.widthPx ?? 720;
  const height = options.heightPx ?? 420;
  const all = curves.flatMap((c) => c.points);
  const xMin = all.length > 0 ? Math.min(...all.map((p) => p.step)) : 0;
  const xMax = Math.max(xMin + 1, ...all.map((p) => p.step));
  const yMax = Math.max(1, ...all.map((p) => p.value));
  const yMin = Math.min(0, ...all.map((p) => p.value));
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = height - MARGIN.top - MARGIN.bottom;
  const x = (step: number) => MARGIN.left + ((step - xMin) / (xMax - xMin)) * plotW;
  const y = (value: number) => MARGIN.top + (1 - (value - yMin) / (yMax - yMin)) * plotH;
  const f = (n: number) => n.toFixed(1);

  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="24" text-anchor="middle" font-size="16">${escapeXml(options.title)}</text>`,
  ];
  for (const t of niceTicks(yMin, yMax)) {
    parts.push(
      `<line x1="${MARGIN.left}" x2="${width - MARGIN.right}" y1="${f(y(t))}" y2="${f(y(t))}" stroke="#ddd"/>`,
      `<text x="${MARGIN.left - 8}" y="${f(y(t) + 4)}" text-anchor="end">${tickText(t)}</text>`,
    );
  }
  for (const t of niceTicks(xMin, xMax)) {
    const tx = f(x(t));
    parts.push(
      `<line x1="${tx}" x2="${tx}" y1="${MARGIN.top}" y2="${height - MARGIN.bottom}" stroke="#eee"/>`,
      `<text x="${tx}" y="${height - MARGIN.bottom + 18}" text-anchor="middle">${tickText(t)}</text>`,
    );
  }
  parts.push(
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#444"/>`,
    `<text x="${MARGIN.left + plotW / 2}" y="${height - 12}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`,
    `<text transform="translate(18 ${MARGIN.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escapeXml(options.yLabel)}</text>`,
  );
  const legend = legendBox(curves, width, MARGIN.left + 8);
  parts.push(
    `<rect x="${f(legend.x)}" y="${MARGIN.top + 4}" width="${f(legend.width)}" height="${curves.length * 18 + 6}" fill="white" fill-opacity="0.85" stroke="#ccc"/>`,
  );
  curves.forEach((curve, i) => {
    const color = escapeXml(curve.color);
    if (curve.points.length > 0) {
      const path = curve.points.map((p, k) => `${k === 0 ? "M" : "L"}${f(x(p.step))},${f(y(p.value))}`).join(" ");
      parts.push(`<path d="${path}" fill="none" stroke="${color}" stroke-width="2"/>`);
      if (curve.dots) {
        for (const p of curve.points)
          parts.push(`<circle cx="${f(x(p.step))}" cy="${f(y(p.value))}" r="3.5" fill="${color}"/>`);
      }
    }
    const ly = MARGIN.top + 16 + i * 18;
    const lx = legend.x + LEGEND_PAD_PX;
    parts.push(
      `<line x1="${lx}" x2="${lx + 24}" y1="${ly - 4}" y2="${ly - 4}" stroke="${color}" stroke-width="3"/>`,
      `<text x="${lx + 30}" y="${ly}">${escapeXml(curve.label)}</text>`,
    );
  });
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}
