/** @module Finds the project's Python (the `.venv` that `.ci/run` builds) for tests that run Python code. */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { skipWithout } from "./requirement.js";

/** `ARCLIGHT_PYTHON`, else the repository's `.venv/bin/python` when it exists, else null. */
export function testPython(): string | null {
  const fromEnv = process.env.ARCLIGHT_PYTHON;
  if (fromEnv) return fromEnv;
  const venv = resolve(import.meta.dirname, "../../.venv/bin/python");
  return existsSync(venv) ? venv : null;
}

/** Whether Python tests are skipped (see `skipWithout`). @throws {Error} under `CI=true` when no venv is found */
export function skipWithoutPython(): boolean {
  return skipWithout({
    name: "the Python venv with torch (the torch engine worker, Python agents)",
    missing: () => (testPython() === null ? "no ARCLIGHT_PYTHON and no .venv/bin/python at the repository root" : null),
    howToGet:
      "python3 -m venv .venv && .venv/bin/pip install --retries 0 --timeout 5 -r requirements-dev.txt " +
      "(as .ci/run does), or set ARCLIGHT_PYTHON to a Python that has them",
  });
}
