/** @module The processes the controller owns, persisted atomically so a restart can adopt or fail them. */
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { z } from "zod";
import { makeDirs } from "../fs/make-dirs.js";

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

/** A state file that exists but cannot be used: unreadable, not JSON, or not in the state file's shape. */
export class StateFileInvalid extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`controller state file ${path}: ${reason}`, options);
    this.name = "StateFileInvalid";
  }
}

/** Reads and writes the state file at one path. */
export class ControllerStateFile {
  /** @param path - the JSON file; its folder is created on first save */
  constructor(readonly path: string) {}

  /** Owned processes by rollout id; empty when absent. @throws {StateFileInvalid} when unusable */
  load(): Map<string, OwnedProcess> {
    let text: string;
    try {
      text = readFileSync(this.path, "utf8");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return new Map();
      const reason = code === "EISDIR" ? "is a directory, expected a JSON file" : `cannot read it (${code ?? err})`;
      throw new StateFileInvalid(this.path, reason, { cause: err });
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new StateFileInvalid(this.path, `not JSON (${(err as Error).message})`, { cause: err });
    }
    const parsed = StateSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const where = issue.path.length > 0 ? `key ${issue.path.join(".")}: ` : "";
      throw new StateFileInvalid(this.path, `not a controller state file (${where}${issue.message})`);
    }
    return new Map(Object.entries(parsed.data.processes));
  }

  /** Replaces the file's content with `processes`, atomically. */
  save(processes: ReadonlyMap<string, OwnedProcess>): void {
    makeDirs(dirname(this.path));
    const tmp = `${this.path}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify({ version: 1, processes: Object.fromEntries(processes) }));
    renameSync(tmp, this.path);
  }
}
