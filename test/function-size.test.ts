/**
 * Function sizes of src/ (STYLE.md §2: median about 10 lines, rarely over 80): no function, method, accessor or
 * arrow function spans more than 80 lines, counted from its first line to its closing brace. Test code is left out:
 * `*.test.ts` and the reusable suites that import vitest (`engine.contract.ts`, `store/testing/contract-*.ts`), whose
 * `describe` callbacks list cases. A failure names each function with its file, line and length.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../src", import.meta.url));
const MAX_LINES = 80;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

/** True for a reusable test suite (it imports vitest). */
function isTestSuite(text: string): boolean {
  return /from "vitest"/.test(text);
}

/** A function-like node with a body: declarations, methods, accessors, constructors, arrows, expressions. */
function isFunction(node: ts.Node): node is ts.FunctionLikeDeclaration {
  return (
    (ts.isFunctionDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) ||
      ts.isSetAccessorDeclaration(node) ||
      ts.isConstructorDeclaration(node) ||
      ts.isArrowFunction(node) ||
      ts.isFunctionExpression(node)) &&
    node.body !== undefined
  );
}

/** Every function of src/ as `file:line name` and its length in lines. */
function functionSizes(): { where: string; lines: number }[] {
  const sizes: { where: string; lines: number }[] = [];
  for (const path of sourceFiles(SRC)) {
    const text = readFileSync(path, "utf8");
    if (isTestSuite(text)) continue;
    const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (isFunction(node)) {
        const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        const name = node.name && !ts.isComputedPropertyName(node.name) ? node.name.getText(source) : "(anonymous)";
        sizes.push({ where: `${relative(SRC, path)}:${start + 1} ${name}`, lines: end - start + 1 });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return sizes;
}

describe("function sizes of src/", () => {
  const sizes = functionSizes();

  it("measures a real tree (guards the rule below against an empty scan)", () => {
    expect(sizes.length).toBeGreaterThan(500);
  });

  it(`no function is longer than ${MAX_LINES} lines`, () => {
    const long = sizes.filter((s) => s.lines > MAX_LINES).map((s) => `${s.where}: ${s.lines} lines`);
    expect(long).toEqual([]);
  });
});
