/**
 * Documentation coverage of the whole source tree (STYLE.md §4): every file under src/ (tests aside) opens with a
 * `@module` doc, every exported statement — re-exports included — has its own TSDoc comment directly above it, and
 * every public field or getter of an exported class has one. Methods and constructors are left to review: most
 * implement a documented interface (`Store`, `Engine`) or belong to an error class documented as a whole.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
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

function isExported(node: ts.Node): boolean {
  if (ts.isExportDeclaration(node) || ts.isExportAssignment(node)) return true;
  return ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
}

/** True when the comment right before `node` is a TSDoc comment other than the file's `@module` doc. */
function hasOwnDoc(text: string, node: ts.Node): boolean {
  const last = (ts.getLeadingCommentRanges(text, node.getFullStart()) ?? []).at(-1);
  if (!last) return false;
  const comment = text.slice(last.pos, last.end);
  return comment.startsWith("/**") && !comment.includes("@module");
}

function isPublicFieldOrGetter(member: ts.ClassElement): boolean {
  if (!ts.isPropertyDeclaration(member) && !ts.isGetAccessorDeclaration(member)) return false;
  if (member.name && ts.isPrivateIdentifier(member.name)) return false;
  const modifiers = ts.getModifiers(member) ?? [];
  return !modifiers.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword);
}

/** Every problem in one file, as `path:line: what`. */
function problemsOf(path: string): string[] {
  const text = readFileSync(path, "utf8");
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const where = (node: ts.Node) =>
    `${relative(SRC, path)}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
  const problems: string[] = [];
  const head = text.trimStart();
  if (!head.startsWith("/**") || !head.slice(0, head.indexOf("*/")).includes("@module"))
    problems.push(`${relative(SRC, path)}:1: no leading @module doc`);
  for (const statement of file.statements) {
    if (!isExported(statement)) continue;
    if (!hasOwnDoc(text, statement)) problems.push(`${where(statement)}: export without TSDoc`);
    if (!ts.isClassDeclaration(statement)) continue;
    for (const member of statement.members)
      if (isPublicFieldOrGetter(member) && !hasOwnDoc(text, member))
        problems.push(`${where(member)}: public member without TSDoc`);
  }
  return problems;
}

describe("TSDoc coverage of src/", () => {
  it("documents every module, every export (re-exports included) and every public class field", () => {
    const files = sourceFiles(SRC);
    expect(files.length).toBeGreaterThan(100);
    expect(files.flatMap(problemsOf)).toEqual([]);
  });
});
