/** @module Whether a suite needing something beyond `npm ci` runs, and what is missing and how to get it when not. */

/** Something a suite needs beyond `npm ci`, and how to check for it. */
export interface Requirement {
  /** What it is, as the skip note names it, e.g. "PostgreSQL server binaries". */
  name: string;
  /** Why it is missing here (e.g. "no pg_ctl in /usr/lib/postgresql/{17,16,15}/bin"), or null when it is present. */
  missing: () => string | null;
  /** How to get it, one line (the command `.ci/run` uses, and the environment variable that points elsewhere). */
  howToGet: string;
}

/** Environment of {@link skipWithout}: the variables it reads and where its note goes. */
export interface SkipEnvironment {
  /** `CI=true`: a missing requirement is a failure, so a broken install step never passes as "skipped". */
  ci: boolean;
  /** `ARCLIGHT_TEST_FAST=1` (`npm run test:fast`): every suite with a requirement is skipped on purpose. */
  fast: boolean;
  /** Where the one-line skip note goes (vitest shows it under the test file's name). */
  note: (line: string) => void;
}

function processEnvironment(): SkipEnvironment {
  return {
    ci: process.env.CI === "true",
    fast: process.env.ARCLIGHT_TEST_FAST === "1",
    note: (line) => console.warn(line),
  };
}

/**
 * Whether a suite needing `requirement` is skipped, printing one note why.
 * @throws {Error} under `CI=true` (not `test:fast`) when it is missing, so a broken install never passes as skipped
 */
export function skipWithout(requirement: Requirement, env: SkipEnvironment = processEnvironment()): boolean {
  if (env.fast) {
    env.note(`skipped (npm run test:fast): suites that need ${requirement.name}; npm test runs them`);
    return true;
  }
  const missing = requirement.missing();
  if (missing === null) return false;
  const what = `${requirement.name}: ${missing}; ${requirement.howToGet}`;
  if (env.ci) throw new Error(`CI=true but no ${what}`);
  env.note(`skipped: needs ${what}`);
  return true;
}
