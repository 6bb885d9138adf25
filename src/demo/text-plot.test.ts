import { describe, expect, it } from "vitest";
import { renderTextPlot } from "./text-plot.js";

describe("renderTextPlot", () => {
  it("puts each point's marker at its step column and reward row", () => {
    const chart = renderTextPlot(
      [
        {
          label: "train",
          color: "",
          marker: "*",
          points: [
            { step: 0, value: 0 },
            { step: 4, value: 1 },
          ],
        },
        { label: "val", color: "", marker: "o", points: [{ step: 2, value: 0.5 }] },
      ],
      { width: 5, height: 2 },
    );
    expect(chart.split("\n")).toEqual([
      "  1.00 |    *",
      "  0.50 |  o  ",
      "  0.00 |*    ",
      "       +-----",
      "        0   4  step",
      "        * train   o val",
    ]);
  });
});
