/**
 * @module Making a folder and its missing parents, without Node's `mkdir({ recursive: true })`: on a file system that
 * answers ENOENT for a folder whose parent exists (`/proc`, `/proc/x`), Node 20's recursive mkdir loops for ever
 * (sync and async alike), so a bad path given by a user hung the command instead of failing.
 */
import { mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/**
 * Makes `path` and every missing parent, like `mkdir -p`; a folder that exists already is fine.
 * @param path - the folder, absolute or relative to the working directory
 * @throws {NodeJS.ErrnoException} the first mkdir the file system refuses (ENOENT, EACCES, EROFS…), or ENOTDIR
 *   when `path` or a parent is a file
 */
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

/**
 * @returns whether mkdir's `err` only says that `dir` is a folder already (made meanwhile by someone else, too)
 * @throws {NodeJS.ErrnoException} ENOTDIR when `dir` exists and is not a folder
 */
function existingFolder(dir: string, err: unknown): boolean {
  if ((err as NodeJS.ErrnoException).code !== "EEXIST") return false;
  if (statSync(dir, { throwIfNoEntry: false })?.isDirectory() ?? false) return true;
  const notFolder: NodeJS.ErrnoException = new Error(`ENOTDIR: ${dir} is a file, not a folder`);
  notFolder.code = "ENOTDIR";
  notFolder.path = dir;
  throw notFolder;
}
