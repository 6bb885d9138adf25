/**
 * @module Where `POST /v1/load_weights` may read: only directories inside the configured checkpoint root, after every
 * symlink is resolved (`realpath`). A path outside the root is refused before anything is looked at, so the answer
 * never tells whether something exists there.
 */
import { realpathSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import { ArclightError, NotFound } from "../../protocol/errors.js";

/** A load_weights path outside the checkpoint root, or no root configured (HTTP 403). */
export class CheckpointOutsideRoot extends ArclightError {
  constructor(message: string) {
    super("checkpoint_outside_root", 403, message);
  }
}

/** @returns true when `path` is `root` or below it (both absolute and normalised) */
function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** The checkpoint root as written (absolute) and as resolved (symlinks followed). */
export interface CheckpointRoot {
  written: string;
  real: string;
}

/**
 * The checkpoint root as the server checks against it.
 * @param root - the configured root; undefined: load_weights is off
 * @returns its absolute and real paths, or undefined
 * @throws {Error} when the configured root does not exist (a startup mistake, reported by the CLI)
 */
export function checkpointRootOf(root: string | undefined): CheckpointRoot | undefined {
  return root === undefined ? undefined : { written: resolve(root), real: realpathSync(root) };
}

/**
 * Resolves a `load_weights` path inside the root.
 * 1. No root configured → 403.
 * 2. The path (relative paths against the server's working directory) must lie inside the root as written → else 403.
 * 3. Its real path (symlinks resolved) must exist → else 404, and lie inside the root → else 403 (a symlink escape).
 * @param root - the root (see {@link checkpointRootOf}); undefined: load_weights is off
 * @param path - the path the request names
 * @returns the real path to load
 * @throws {CheckpointOutsideRoot} steps 1, 2, 3 (outside)
 * @throws {NotFound} nothing at a path inside the root
 */
export function resolveCheckpointPath(root: CheckpointRoot | undefined, path: string): string {
  if (root === undefined) {
    throw new CheckpointOutsideRoot("load_weights is off: start the engine server with --checkpoint-root DIR");
  }
  const outside = new CheckpointOutsideRoot(`load_weights ${path}: not inside the checkpoint root`);
  const written = resolve(path);
  if (!isInside(root.written, written) && !isInside(root.real, written)) throw outside;
  let real: string;
  try {
    real = realpathSync(written);
  } catch {
    throw new NotFound(`Checkpoint directory ${path} not found`);
  }
  if (!isInside(root.real, real)) throw outside;
  return real;
}
