/** @module A phase's progress: a cli-progress bar on a TTY, a line per quarter elsewhere, then one summary line. */
import { SingleBar } from "cli-progress";

/** A running phase. */
export interface PhaseProgress {
  /** Sets the count done and the bar's trailing note (e.g. the current loss). */
  update(done: number, note?: string): void;
  /** Ends the bar and prints `summary` on its own line. */
  finish(summary: string): void;
}

/** Starts a phase's progress bar over `total` units. */
export function startPhase(label: string, total: number, stream: NodeJS.WriteStream = process.stdout): PhaseProgress {
  const bar = stream.isTTY
    ? new SingleBar({
        stream,
        format: `  ${label} [{bar}] {value}/{total} ETA {eta_formatted} {note}`,
        hideCursor: true,
      })
    : null;
  bar?.start(total, 0, { note: "" });
  let quarter = 0;
  return {
    update(done, note = "") {
      bar?.update(done, { note });
      // Without a TTY: one line per quarter reached (25%, 50%, 75%), so a log shows the run is alive.
      const reached = total > 0 ? Math.floor((done / total) * 4) : 0;
      if (bar === null && reached > quarter && reached < 4) {
        quarter = reached;
        stream.write(`  ${label} ${done}/${total} ${note}\n`);
      }
    },
    finish(summary) {
      bar?.stop();
      stream.write(`  ${summary}\n`);
    },
  };
}
