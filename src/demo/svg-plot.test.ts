import { describe, expect, it } from "vitest";
import { LABEL_CHAR_PX, niceTicks, renderSvgPlot } from "./svg-plot.js";

describe("niceTicks", () => {
  it("picks round steps of 1, 2 or 5 times a power of ten", () => {
    expect(niceTicks(0, 1)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(0, 40)).toEqual([0, 10, 20, 30, 40]);
    expect(niceTicks(1, 7)).toEqual([2, 4, 6]); // raw step 1.2 rounds up to 2
  });

  it("returns the single value of an empty range", () => {
    expect(niceTicks(3, 3)).toEqual([3]);
  });
});

describe("renderSvgPlot", () => {
  const options = { title: "reward <calc>", xLabel: "step", yLabel: "reward" };

  it("draws one path per non-empty curve through its points, and dots where asked", () => {
    const svg = renderSvgPlot(
      [
        {
          label: "train",
          color: "#1f77b4",
          points: [
            { step: 0, value: 0 },
            { step: 10, value: 1 },
          ],
        },
        { label: "val", color: "#d62728", points: [{ step: 0, value: 0.5 }], dots: true },
        { label: "empty", color: "#000", points: [] },
      ],
      { ...options, widthPx: 188, heightPx: 200 },
    );
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
    // Plot area: x 64..164 (width 188 - 64 - 24), y 48..148 (height 200 - 48 - 52); y = 1 at the top.
    expect(svg).toContain('<path d="M64.0,148.0 L164.0,48.0"');
    expect(svg).toContain('<circle cx="64.0" cy="98.0" r="3.5" fill="#d62728"/>');
    expect(svg.match(/<path /g)).toHaveLength(2);
    expect(svg).toContain(">empty</text>");
  });

  it("fits the legend's longest label inside the plot (the demo's labels at the default size)", () => {
    const labels = ["train reward (mean of rollouts)", "val reward (greedy)"];
    const curves = labels.map((label) => ({ label, color: "#000", points: [{ step: 1, value: 0.5 }] }));
    const svg = renderSvgPlot(curves, options);
    const plotRight = 720 - 24;
    for (const label of labels) {
      const x = Number(
        new RegExp(`<text x="([\\d.]+)" y="[\\d.]+">${label.replace(/[()]/g, "\\$&")}</text>`).exec(svg)?.[1],
      );
      expect(x).toBeGreaterThan(64);
      expect(x + label.length * LABEL_CHAR_PX).toBeLessThanOrEqual(plotRight);
    }
  });

  it("escapes text so the document stays well-formed", () => {
    const svg = renderSvgPlot([], options);
    expect(svg).toContain("reward &#60;calc&#62;");
    expect(svg).not.toContain("<calc>");
  });
});
