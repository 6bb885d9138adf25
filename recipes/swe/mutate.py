"""Bug injection by program mutation (SWE-smith's procedural modifiers, on Python's `ast`): each mutation changes one
expression or removes one `if` statement of a function, and is written back into the source text at that node's
position, so the bug patch touches only the lines it must.

| kind | change |
|---|---|
| `flip_comparison` | `<` ↔ `<=`, `>` ↔ `>=`, `==` ↔ `!=`, `<` ↔ `>`, `in` ↔ `not in` |
| `off_by_one` | an integer constant `n` → `n + 1` or `n - 1` (range bounds, indices, thresholds) |
| `swap_operator` | `+` ↔ `-`, `*` → `+`, `/` ↔ `//`, `%` → `//` |
| `swap_boolean` | `and` ↔ `or` |
| `remove_branch` | an `if` statement without `else` deleted (a guard, an early return, a special case) |
"""

from __future__ import annotations

import ast
import copy
import difflib
from collections.abc import Iterator
from dataclasses import dataclass

COMPARE_SWAPS = {ast.Lt: [ast.LtE, ast.Gt], ast.LtE: [ast.Lt], ast.Gt: [ast.GtE, ast.Lt], ast.GtE: [ast.Gt],
                 ast.Eq: [ast.NotEq], ast.NotEq: [ast.Eq], ast.In: [ast.NotIn], ast.NotIn: [ast.In]}
BINOP_SWAPS = {ast.Add: [ast.Sub], ast.Sub: [ast.Add], ast.Mult: [ast.Add], ast.Div: [ast.FloorDiv],
               ast.FloorDiv: [ast.Div], ast.Mod: [ast.FloorDiv]}


@dataclass(frozen=True)
class Mutation:
    """One mutant of a module: its kind, the function it changes, the 1-based line, and the mutated source."""

    kind: str
    function: str
    line: int
    source: str


def functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef]]:
    """Top-level functions and methods, with qualified names (`Class.method`); private helpers (`_x`) skipped."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    yield f"{node.name}.{item.name}", item


def replace_segment(lines: list[str], node: ast.AST, text: str) -> str:
    """The source with `node` (on one line) replaced by `text`."""
    line = lines[node.lineno - 1].encode()
    new = line[: node.col_offset] + text.encode() + line[node.end_col_offset:]
    return "".join(lines[: node.lineno - 1] + [new.decode()] + lines[node.lineno:])


def expression_mutants(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """Mutated copies of one expression node."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        for swap in COMPARE_SWAPS.get(type(node.ops[0]), []):
            yield "flip_comparison", ast.Compare(left=node.left, ops=[swap()], comparators=node.comparators)
    elif isinstance(node, ast.BinOp):
        for swap in BINOP_SWAPS.get(type(node.op), []):
            yield "swap_operator", ast.BinOp(left=node.left, op=swap(), right=node.right)
    elif isinstance(node, ast.BoolOp):
        yield "swap_boolean", ast.BoolOp(op=ast.Or() if isinstance(node.op, ast.And) else ast.And(), values=node.values)
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        for delta in (1, -1):
            if node.value + delta >= 0:
                yield "off_by_one", ast.Constant(value=node.value + delta)


def mutations(source: str) -> list[Mutation]:
    """Every single-point mutant of `source` that parses to exactly the intended tree, in source order."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    found: list[Mutation] = []
    for name, function in functions(tree):
        for node in ast.walk(function):
            if isinstance(node, ast.If) and not node.orelse:
                found.extend(_removed_branch(lines, function, name, node))
            if not isinstance(node, ast.expr) or node.lineno != node.end_lineno:
                continue
            for kind, mutant in expression_mutants(node):
                mutated = _rewrite(source, tree, lines, node, mutant)
                if mutated is not None:
                    found.append(Mutation(kind, name, node.lineno, mutated))
    unique = {m.source: m for m in found}
    return sorted(unique.values(), key=lambda m: (m.line, m.kind, m.source))


def _rewrite(source: str, tree: ast.Module, lines: list[str], node: ast.AST, mutant: ast.AST) -> str | None:
    """The source with `node` replaced by `mutant`'s text, parenthesised only where precedence needs it; None when
    neither form parses to the intended tree."""
    intended = ast.dump(_replaced(tree, node, mutant))
    text = ast.unparse(ast.fix_missing_locations(copy.deepcopy(mutant)))
    for candidate in (text, f"({text})"):
        mutated = replace_segment(lines, node, candidate)
        try:
            if mutated != source and ast.dump(ast.parse(mutated)) == intended:
                return mutated
        except SyntaxError:
            pass
    return None


def _replaced(tree: ast.Module, node: ast.AST, mutant: ast.AST) -> ast.Module:
    """A copy of `tree` with `node` swapped for `mutant` (nodes matched by identity before copying)."""
    memo: dict[int, ast.AST] = {id(node): mutant}
    return copy.deepcopy(tree, memo)


def _removed_branch(lines: list[str], function: ast.FunctionDef, name: str, node: ast.If) -> Iterator[Mutation]:
    parent_body = next((body for body in _bodies(function) if node in body), None)
    if parent_body is None or len(parent_body) < 2:
        return  # removing the only statement would leave an empty block
    mutated = "".join(lines[: node.lineno - 1] + lines[node.end_lineno:])
    if _parses(mutated):
        yield Mutation("remove_branch", name, node.lineno, mutated)


def _bodies(function: ast.FunctionDef) -> Iterator[list[ast.stmt]]:
    for node in ast.walk(function):
        for field in ("body", "orelse"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                yield body


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
        return True
    except SyntaxError:
        return False


def unified_diff(path: str, before: str, after: str) -> str:
    """A git-style unified diff of one file (`a/PATH`, `b/PATH`), as `git apply` takes it."""
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 f"a/{path}", f"b/{path}", n=3)
    return f"diff --git a/{path} b/{path}\n" + "".join(lines)
