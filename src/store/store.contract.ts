/**
 * @module The contract every `Store` passes, run by the memory, SQLite and PostgreSQL tests; cases live in
 * `testing/contract-*.ts`.
 */
import { afterEach, describe, it } from "vitest";
import type { Store } from "./store.js";
import { attemptCases } from "./testing/contract-attempts.js";
import { eventCases } from "./testing/contract-events.js";
import type { ContractContext } from "./testing/contract-helpers.js";
import { resourceCases } from "./testing/contract-resources.js";
import { rolloutCases } from "./testing/contract-rollouts.js";

/** Builds a fresh, empty store for one test. */
export type MakeStore = () => Store | Promise<Store>;

/** Contract cases a store skips: case name → the reason, printed in the skipped test's name. */
export type ContractSkips = Readonly<Record<string, string>>;

/** Registers the store contract; `skips` maps a case name to why this store skips it. */
export function runStoreContract(name: string, makeStore: MakeStore, skips: ContractSkips = {}): void {
  describe(`${name} (Store contract)`, () => {
    const open: Store[] = [];
    afterEach(async () => {
      await Promise.all(open.splice(0).map((s) => s.close()));
    });
    const context: ContractContext = {
      async fresh() {
        const store = await makeStore();
        open.push(store);
        return store;
      },
      test(caseName, fn) {
        const reason = skips[caseName];
        if (reason) it.skip(`${caseName} (skipped: ${reason})`, fn);
        else it(caseName, fn);
      },
    };
    rolloutCases(context);
    eventCases(context);
    attemptCases(context);
    resourceCases(context);
  });
}
