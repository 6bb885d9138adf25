"""The calculator as an MCP server over stdio (`python -m recipes.calc_x.calculator_server`, or run this file): one
tool, `calculate`, which evaluates an arithmetic expression with `calculator.evaluate`."""

from __future__ import annotations

import logging
import os
import sys

from mcp.server.mcpserver import MCPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from calculator import CalculatorError, evaluate  # noqa: E402

server = MCPServer("calculator")


@server.tool()
def calculate(expression: str) -> str:
    """Evaluates an arithmetic expression with + - * / ** % ( ) and decimal numbers, e.g. `(12 + 30) * 2 / 7`."""
    try:
        return evaluate(expression)
    except CalculatorError as err:
        # Returned as the tool's text, so the model reads why and may try again.
        return f"error: {err}"


if __name__ == "__main__":
    logging.disable(logging.WARNING)
    server.run("stdio")
