/** @module Finds the project's Python (the `.venv` that `.ci/run` builds) for tests that run Python code. */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { skipWithout } from "./requirement.js";

/**
 * The Python interpreter tests should use: `ARCLIGHT_PYTHON` when set, else `.venv/bin/python` at the repository
 * root when it exists (made by `.ci/run`, or by hand: `python3 -m venv .venv && .venv/bin/pip install --retries 0
 * --timeout 5 -r requirements-dev.txt`).
 * @returns absolute path of the interpreter, or null when there is none
 */
export function testPython(): string | null {
  const fromEnv = process.env.ARCLIGHT_PYTHON;
  if (fromEnv) return fromEnv;
  const venv = resolve(import.meta.dirname, "../../.venv/bin/python");
  return existsSync(venv) ? venv : null;
}

/**
 * Whether Python-backed tests are skipped: when there is no Python venv (outside CI), or under `npm run test:fast`.
 * Prints what is missing and how to get it.
 * @returns true to skip
 * @throws {Error} in CI (`CI=true`) when no Python venv is found, so a broken install step never passes as "skipped"
 */
export function skipWithoutPython(): boolean {
  return skipWithout({
    name: "the Python venv with torch (the torch engine worker, Python agents)",
    missing: () => (testPython() === null ? "no ARCLIGHT_PYTHON and no .venv/bin/python at the repository root" : null),
    howToGet:
      "python3 -m venv .venv && .venv/bin/pip install --retries 0 --timeout 5 -r requirements-dev.txt " +
      "(as .ci/run does), or set ARCLIGHT_PYTHON to a Python that has them",
  });
}
