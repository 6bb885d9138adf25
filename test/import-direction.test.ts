/**
 * Import directions of src/ (STYLE.md §1, §11): nothing outside `cli/` imports `cli/`; `engine/` and `gateway/` never
 * import each other (what both speak lives in `wire/`, which imports only `protocol/`); `store/` imports only `protocol/` and `fs/` (besides itself, Node and packages); `fs/` imports no other
 * folder; the engine server stands on the engine interfaces, not on an implementation; and the module graph has no
 * cycle. Every `import`, `export … from` and
 * `import("…")` of a relative path counts, type-only ones too (a type cycle is still a design cycle). Test files are
 * left out: a test may build any real component it needs. A failure names the file, the import, and for a cycle the
 * whole cycle.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../src", import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

/** Relative module specifiers of one file: static imports, `export … from`, and `import("…")` with a literal. */
function specifiers(path: string): string[] {
  const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      if (ts.isStringLiteral(node.moduleSpecifier)) found.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      if (arg && ts.isStringLiteral(arg)) found.push(arg.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found.filter((spec) => spec.startsWith("."));
}

/** The graph: src-relative file → src-relative files it imports (`.js` specifiers mapped to their `.ts` source). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const path of sourceFiles(SRC)) {
    const targets = specifiers(path).map((spec) => relative(SRC, resolve(dirname(path), spec.replace(/\.js$/, ".ts"))));
    graph.set(relative(SRC, path), targets);
  }
  return graph;
}

const graph = importGraph();
const topFolder = (file: string) => file.split("/")[0] ?? file;

/** Every edge `from -> to` where `from` is in a folder matching `fromTop` and `to` breaks `allowed`. */
function violations(fromMatch: (file: string) => boolean, allowed: (to: string, from: string) => boolean): string[] {
  return [...graph].flatMap(([from, targets]) =>
    fromMatch(from) ? targets.filter((to) => !allowed(to, from)).map((to) => `${from} -> ${to}`) : [],
  );
}

/** One cycle per strongly connected group of files, written `a -> b -> … -> a`; empty when the graph is acyclic. */
function cycles(): string[] {
  const found: string[] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (file: string): void => {
    state.set(file, "open");
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue; // a non-TS asset or a missing file: the typecheck reports those
      if (state.get(next) === "open") found.push([...stack.slice(stack.indexOf(next)), next].join(" -> "));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return found;
}

describe("import directions of src/", () => {
  it("reads a real graph (guards the rules below against an empty scan)", () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get("cli/main.ts")?.length).toBeGreaterThan(0);
  });

  it("nothing outside cli/ imports cli/", () => {
    expect(
      violations(
        (from) => topFolder(from) !== "cli",
        (to) => topFolder(to) !== "cli",
      ),
    ).toEqual([]);
  });

  it("engine/ never imports gateway/", () => {
    expect(
      violations(
        (from) => topFolder(from) === "engine",
        (to) => topFolder(to) !== "gateway",
      ),
    ).toEqual([]);
  });

  it("gateway/ never imports engine/", () => {
    expect(
      violations(
        (from) => topFolder(from) === "gateway",
        (to) => topFolder(to) !== "engine",
      ),
    ).toEqual([]);
  });

  it("wire/ (the model APIs' wire, shared by gateway and engine) imports only wire/ and protocol/", () => {
    const allowed = (to: string) => ["wire", "protocol"].includes(topFolder(to));
    expect(violations((from) => topFolder(from) === "wire", allowed)).toEqual([]);
  });

  it("store/ imports only store/, protocol/ and fs/", () => {
    const allowed = (to: string) => ["store", "protocol", "fs"].includes(topFolder(to));
    expect(violations((from) => topFolder(from) === "store", allowed)).toEqual([]);
  });

  it("fs/ (file-system helpers any layer may use) imports nothing of arclight's outside fs/", () => {
    expect(
      violations(
        (from) => topFolder(from) === "fs",
        (to) => topFolder(to) === "fs",
      ),
    ).toEqual([]);
  });

  it("the engine server imports no engine implementation (only the engine/*.ts interfaces)", () => {
    const isImplementation = (to: string) => to.startsWith("engine/") && to.split("/").length > 2;
    const allowed = (to: string) => to.startsWith("engine/server/") || !isImplementation(to);
    expect(violations((from) => from.startsWith("engine/server/"), allowed)).toEqual([]);
  });

  it("has no import cycle", () => {
    expect(cycles()).toEqual([]);
  });
});
