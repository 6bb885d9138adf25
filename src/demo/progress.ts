/**
 * @module Progress of one demo phase: a cli-progress bar on a TTY, nothing until the end elsewhere (CI logs stay
 * short), then one summary line either way.
 */
import { SingleBar } from "cli-progress";

/** A running phase. */
export interface PhaseProgress {
  /** Sets the count done and the bar's trailing note (e.g. the current loss). */
  update(done: number, note?: string): void;
  /** Ends the bar and prints `summary` on its own line. */
  finish(summary: string): void;
}

/**
 * Starts a phase's progress bar.
 * @param label - short phase name shown before the bar
 * @param total - units of work (rollouts, steps)
 * @param stream - where to draw (default process.stdout)
 * @returns the phase's progress
 */
export function startPhase(label: string, total: number, stream: NodeJS.WriteStream = process.stdout): PhaseProgress {
  const bar = stream.isTTY
    ? new SingleBar({ stream, format: `  ${label} [{bar}] {value}/{total} {note}`, hideCursor: true })
    : null;
  bar?.start(total, 0, { note: "" });
  return {
    update(done, note = "") {
      bar?.update(done, { note });
    },
    finish(summary) {
      bar?.stop();
      stream.write(`  ${summary}\n`);
    },
  };
}
