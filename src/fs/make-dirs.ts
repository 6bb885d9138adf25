/**
 * @module `mkdir -p` without Node's recursive mkdir, which loops for ever on Node 20 where the file system answers
 * ENOENT for a folder whose parent exists (`/proc/x`).
 */
import { mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/** Makes `path` and every missing parent. @throws {NodeJS.ErrnoException} the first refused mkdir, or ENOTDIR */
export function makeDirs(path: string): void {
  const dir = resolve(path);
  try {
    mkdirSync(dir);
    return;
  } catch (err) {
    if (existingFolder(dir, err)) return;
    const parent = dirname(dir);
    if ((err as NodeJS.ErrnoException).code !== "ENOENT" || parent === dir) throw err;
    makeDirs(parent);
  }
  // The parent exists now: a second ENOENT is the file system's answer for this folder, thrown as it is.
  try {
    mkdirSync(dir);
  } catch (err) {
    if (!existingFolder(dir, err)) throw err;
  }
}

/** @returns whether `err` only says `dir` is a folder already; throws ENOTDIR when it is a file */
function existingFolder(dir: string, err: unknown): boolean {
  if ((err as NodeJS.ErrnoException).code !== "EEXIST") return false;
  if (statSync(dir, { throwIfNoEntry: false })?.isDirectory() ?? false) return true;
  const notFolder: NodeJS.ErrnoException = new Error(`ENOTDIR: ${dir} is a file, not a folder`);
  notFolder.code = "ENOTDIR";
  notFolder.path = dir;
  throw notFolder;
}
