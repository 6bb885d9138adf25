"""A safe arithmetic evaluator: + - * / ** % unary minus and parentheses over decimal numbers, parsed with `ast`
(never `eval`). The calculator tool's whole logic."""

from __future__ import annotations

import ast
import math
import operator
from fractions import Fraction

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.Mod: operator.mod,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}
MAX_EXPONENT = 64
MAX_CHARS = 500


class CalculatorError(ValueError):
    """An expression the calculator does not evaluate; the message says why (the model reads it)."""


def _value(node: ast.AST) -> Fraction:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return Fraction(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, (ast.Div, ast.Mod)) and right == 0:
            raise CalculatorError("division by zero")
        if isinstance(node.op, ast.Pow):
            if right.denominator != 1 or abs(right) > MAX_EXPONENT:
                raise CalculatorError(f"exponents must be whole numbers up to {MAX_EXPONENT}")
            return left**int(right)
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_value(node.operand))
    raise CalculatorError(f"unsupported syntax: {ast.dump(node)[:80]}")


def evaluate(expression: str) -> str:
    """The value of `expression`, exact (fractions), printed as an integer or a decimal rounded to 6 places.

    :raises CalculatorError: empty, too long, not arithmetic, or dividing by zero
    """
    text = expression.strip().replace("^", "**").replace("×", "*").replace("÷", "/")
    if not text or len(text) > MAX_CHARS:
        raise CalculatorError(f"expression must have 1 to {MAX_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as err:
        raise CalculatorError(f"not an arithmetic expression: {err.msg}") from None
    value = _value(tree.body)
    if value.denominator == 1:
        return str(value.numerator)
    rounded = round(float(value), 6)
    if not math.isfinite(rounded):
        raise CalculatorError("result out of range")
    return f"{rounded:.6f}".rstrip("0").rstrip(".")
