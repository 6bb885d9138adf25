/** @module Finds the project's Python (the `.venv` that `.ci/run` builds) for tests that run Python code. */
import { existsSync } from "node:fs";
import { resolve } from "node:path";

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
 * Whether Python-backed tests may be skipped: only outside CI. In CI (`CI=true`) a missing venv is a failure, so a
 * broken install step can never pass as "skipped".
 * @returns true when there is no Python venv and this is not CI
 * @throws {Error} in CI when no Python venv is found
 */
export function skipWithoutPython(): boolean {
  if (testPython() !== null) return false;
  if (process.env.CI === "true") throw new Error("CI=true but no Python venv: .ci/run must build .venv");
  return true;
}
