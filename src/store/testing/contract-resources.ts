/** @module Store contract cases: versioned resources, concurrent posts never sharing a version. */
import { describe, expect } from "vitest";
import type { ContractContext } from "./contract-helpers.js";

/** Registers the resource cases of the store contract. */
export function resourceCases({ fresh, test }: ContractContext): void {
  describe("resources", () => {
    test("each add stores the next version; the latest is read by default and every version stays readable", async () => {
      const store = await fresh();
      const first = await store.addResourceVersion("prompt", "You are a calculator.");
      const second = await store.addResourceVersion("prompt", { template: "Answer {question}", engine: "f-string" });
      expect([first.version, second.version]).toEqual([1, 2]);
      expect(await store.getResource("prompt")).toMatchObject({ name: "prompt", version: 2, value: second.value });
      expect(await store.getResource("prompt", 1)).toMatchObject({ version: 1, value: "You are a calculator." });
      expect(await store.getResource("prompt", 3)).toBeUndefined();
      expect(await store.getResource("other")).toBeUndefined();
      expect(typeof first.created_at).toBe("number");
    });

    test("names are versioned independently and the latest of each is listed by name", async () => {
      const store = await fresh();
      await store.addResourceVersion("b", 1);
      await store.addResourceVersion("a", "x");
      await store.addResourceVersion("b", 2);
      const latest = await store.listLatestResources();
      expect(latest.map((r) => [r.name, r.version, r.value])).toEqual([
        ["a", 1, "x"],
        ["b", 2, 2],
      ]);
    });

    test("concurrent adds to one name take distinct consecutive versions", async () => {
      const store = await fresh();
      const added = await Promise.all(Array.from({ length: 8 }, (_, i) => store.addResourceVersion("p", i)));
      expect(added.map((r) => r.version).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      for (const r of added) expect((await store.getResource("p", r.version))?.value).toBe(r.value);
    });
  });
}
