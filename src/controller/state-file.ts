/**
 * @module The controller's record of the processes it owns, persisted so that a restarted controller can tell a
 * live agent (adopt it) from a lost one (fail the rollout). Written atomically (temp file + rename).
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { z } from "zod";

/** One owned agent process. */
export const OwnedProcessSchema = z.strictObject({
  attempt_id: z.string(),
  /** Pid of the process-group leader (the agent's process group id equals it). */
  pid: z.number().int().positive(),
  /** Spawn time, epoch ms. */
  started_at_ms: z.number(),
  timeout_seconds: z.number().positive(),
});
/** One owned agent process. */
export type OwnedProcess = z.infer<typeof OwnedProcessSchema>;

const StateSchema = z.strictObject({
  version: z.literal(1),
  processes: z.record(z.string(), OwnedProcessSchema),
});

/** Reads and writes the state file at one path. */
export class ControllerStateFile {
  /** @param path - the JSON file; its folder is created on first save */
  constructor(readonly path: string) {}

  /**
   * @returns owned processes by rollout id; empty when the file does not exist
   * @throws {Error} when the file exists but is not a valid state file (naming the path)
   */
  load(): Map<string, OwnedProcess> {
    let text: string;
    try {
      text = readFileSync(this.path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return new Map();
      throw err;
    }
    const parsed = StateSchema.safeParse(JSON.parse(text));
    if (!parsed.success) throw new Error(`controller state file ${this.path} is invalid: ${parsed.error.message}`);
    return new Map(Object.entries(parsed.data.processes));
  }

  /** Replaces the file's content with `processes`, atomically. */
  save(processes: ReadonlyMap<string, OwnedProcess>): void {
    mkdirSync(dirname(this.path), { recursive: true });
    const tmp = `${this.path}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify({ version: 1, processes: Object.fromEntries(processes) }));
    renameSync(tmp, this.path);
  }
}
