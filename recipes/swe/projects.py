"""The small Python projects the task generator writes: a few kinds of library, each a module and its pytest tests.

A project is deterministic in its kind and seed: the seed picks the package name and the test inputs; the expected
values in the tests are computed by running the reference module here, so the tests pass on it by construction.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

KINDS: dict[str, tuple[str, str]] = {}
"""kind -> (module source, test cases); a test case line is `test_name: expr; expr; ...` with `{x}` seed slots."""

KINDS["stats"] = ('''"""Small statistics helpers."""


def mean(values):
    if not values:
        raise ValueError("mean of an empty list")
    total = 0
    for value in values:
        total += value
    return total / len(values)


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value


def moving_average(values, window):
    averages = []
    for start in range(len(values) - window + 1):
        averages.append(sum(values[start:start + window]) / window)
    return averages


def histogram(values, bins, low, high):
    counts = [0] * bins
    width = (high - low) / bins
    for value in values:
        if value < low or value > high:
            continue
        index = int((value - low) / width)
        if index == bins:
            index = bins - 1
        counts[index] += 1
    return counts


def variance(values):
    center = mean(values)
    return sum((value - center) ** 2 for value in values) / (len(values) - 1)
''', '''test_mean: mean([{a}, {b}, {c}]); mean([{a}])
test_median_odd: median([{c}, {a}, {b}])
test_median_even: median([{a}, {b}, {c}, {d}])
test_clamp_inside: clamp({b}, 0, 100)
test_clamp_edges: clamp(-{a}, 0, 100); clamp(100 + {a}, 0, 100); clamp(0, 0, 100); clamp(100, 0, 100)
test_moving_average: moving_average([{a}, {b}, {c}, {d}], 2); moving_average([{a}, {b}, {c}], 3)
test_histogram: histogram([{a}, {b}, {c}, {d}, 100, 0], 4, 0, 100)
test_histogram_ignores_outside: histogram([-1, 101, {a}], 2, 0, 100)
test_variance: variance([{a}, {b}, {c}, {d}])''')

KINDS["textkit"] = ('''"""Text utilities."""


def word_count(text):
    counts = {}
    for word in text.lower().split():
        word = word.strip(".,;:!?")
        if not word:
            continue
        counts[word] = counts.get(word, 0) + 1
    return counts


def truncate(text, limit):
    if len(text) <= limit:
        return text
    return text[:limit - 3] + "..."


def is_palindrome(text):
    letters = [ch.lower() for ch in text if ch.isalnum()]
    for index in range(len(letters) // 2):
        if letters[index] != letters[len(letters) - 1 - index]:
            return False
    return True


def caesar(text, shift):
    out = []
    for ch in text:
        if ch.isalpha() and ch.islower():
            out.append(chr((ord(ch) - ord("a") + shift) % 26 + ord("a")))
        else:
            out.append(ch)
    return "".join(out)


def run_length(text):
    pieces = []
    index = 0
    while index < len(text):
        end = index
        while end < len(text) and text[end] == text[index]:
            end += 1
        pieces.append(f"{end - index}{text[index]}")
        index = end
    return "".join(pieces)


def wrap(text, width):
    lines = []
    current = ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        elif current:
            current = current + " " + word
        else:
            current = word
    if current:
        lines.append(current)
    return lines
''', '''test_word_count: word_count("{w1} {w2}. {W1}, {w3} {w2}!")
test_truncate_short: truncate("{w1}", 20)
test_truncate_long: truncate("{w1}{w2}{w3}", {n})
test_palindrome_yes: is_palindrome("{w1}, " + "{w1}"[::-1] + "!")
test_palindrome_no: is_palindrome("{w1}{w2}x")
test_caesar: caesar("{w1} {w2}", {k}); caesar("{w3}!", 26 - {k})
test_run_length: run_length("aaab{w1}"); run_length("")
test_wrap: wrap("{w1} {w2} {w3} {w1} {w2}", {n})''')

KINDS["inventory"] = ('''"""A stock inventory with prices."""


class OutOfStock(Exception):
    pass


class Inventory:
    def __init__(self):
        self.items = {}

    def add(self, name, quantity, price):
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        count, _ = self.items.get(name, (0, price))
        self.items[name] = (count + quantity, price)

    def remove(self, name, quantity):
        count, price = self.items.get(name, (0, 0))
        if quantity > count:
            raise OutOfStock(name)
        if count - quantity == 0:
            del self.items[name]
        else:
            self.items[name] = (count - quantity, price)

    def quantity(self, name):
        return self.items.get(name, (0, 0))[0]

    def total_value(self):
        total = 0
        for count, price in self.items.values():
            total += count * price
        return total

    def low_stock(self, threshold):
        return sorted(name for name, (count, _) in self.items.items() if count < threshold)

    def bulk_price(self, name, quantity, discount_from):
        _, price = self.items[name]
        cost = quantity * price
        if quantity >= discount_from:
            cost = cost * 9 // 10
        return cost
''', '''test_add_and_quantity: _stock().quantity("{w1}"); _stock().quantity("missing")
test_add_rejects_zero: _raises(lambda: Inventory().add("x", 0, 1), ValueError)
test_remove_partial: _after_remove("{w1}", 1)
test_remove_all: _after_remove("{w2}", {b})
test_remove_too_many: _raises(lambda: _stock().remove("{w1}", {a} + 1), OutOfStock)
test_total_value: _stock().total_value()
test_low_stock: _stock().low_stock({c})
test_bulk_price: _stock().bulk_price("{w1}", {c}, {c}); _stock().bulk_price("{w1}", {c} - 1, {c})''')
INVENTORY_HELPERS = '''

def _stock():
    stock = Inventory()
    stock.add("{w1}", {a}, {p})
    stock.add("{w2}", {b}, {q})
    stock.add("{w3}", {c}, 3)
    return stock


def _after_remove(name, quantity):
    stock = _stock()
    stock.remove(name, quantity)
    return (stock.quantity(name), name in stock.items)


def _raises(call, error):
    try:
        call()
    except error:
        return True
    return False
'''

KINDS["intervals"] = ('''"""Closed integer intervals as (start, end) pairs."""


def overlaps(first, second):
    return first[0] <= second[1] and second[0] <= first[1]


def merge(intervals):
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def covered(intervals):
    return sum(end - start + 1 for start, end in merge(intervals))


def contains(intervals, point):
    for start, end in intervals:
        if start <= point <= end:
            return True
    return False


def gaps(intervals, low, high):
    result = []
    cursor = low
    for start, end in merge(intervals):
        if start > cursor:
            result.append((cursor, min(start - 1, high)))
        cursor = max(cursor, end + 1)
    if cursor <= high:
        result.append((cursor, high))
    return result


def insert_sorted(points, value):
    low, high = 0, len(points)
    while low < high:
        middle = (low + high) // 2
        if points[middle] < value:
            low = middle + 1
        else:
            high = middle
    return points[:low] + [value] + points[low:]
''', '''test_overlaps: overlaps(({a}, {b}), ({b}, {c})); overlaps(({a}, {a}), ({b}, {c}))
test_merge_adjacent: merge([({a}, {b}), ({b} + 1, {c})])
test_merge_overlapping: merge([({b}, {d}), ({a}, {c}), (100, 101)])
test_covered: covered([({a}, {b}), ({c}, {d})])
test_contains: contains([({a}, {b})], {a}); contains([({a}, {b})], {b} + 1)
test_gaps: gaps([({b}, {c})], 0, 100)
test_insert_sorted: insert_sorted([{a}, {b}, {c}], {b}); insert_sorted([], {a}); insert_sorted([{a}, {b}], 1000)''')

KINDS["grid"] = ('''"""Helpers for rectangular grids (lists of rows)."""


def transpose(grid):
    return [[grid[row][col] for row in range(len(grid))] for col in range(len(grid[0]))]


def neighbours(grid, row, col):
    found = []
    for d_row, d_col in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        r, c = row + d_row, col + d_col
        if 0 <= r < len(grid) and 0 <= c < len(grid[0]):
            found.append((r, c))
    return found


def flood_size(grid, row, col):
    target = grid[row][col]
    seen = {(row, col)}
    stack = [(row, col)]
    while stack:
        r, c = stack.pop()
        for n_row, n_col in neighbours(grid, r, c):
            if (n_row, n_col) not in seen and grid[n_row][n_col] == target:
                seen.add((n_row, n_col))
                stack.append((n_row, n_col))
    return len(seen)


def manhattan(first, second):
    return abs(first[0] - second[0]) + abs(first[1] - second[1])


def rotate(grid):
    return [list(row) for row in zip(*grid[::-1])]


def row_sums(grid):
    return [sum(row) for row in grid]
''', '''test_transpose: transpose([[{a}, {b}, {c}], [{d}, 0, 1]])
test_neighbours_corner: neighbours(_grid(), 0, 0)
test_neighbours_middle: neighbours(_grid(), 1, 1)
test_flood_size: flood_size(_grid(), 0, 0); flood_size(_grid(), 2, 2)
test_manhattan: manhattan(({a}, {b}), ({c}, {d}))
test_rotate: rotate([[{a}, {b}], [{c}, {d}]])
test_row_sums: row_sums(_grid())''')
GRID_HELPERS = '''

def _grid():
    return [[1, 1, {x}], [1, 0, 0], [{y}, 0, 0]]
'''

HELPERS = {"inventory": INVENTORY_HELPERS, "grid": GRID_HELPERS}
NAMES = ["apple", "river", "stone", "cloud", "maple", "tiger", "amber", "lemon", "otter", "pearl"]
PACKAGES = ["kit", "lib", "tools", "core", "utils"]


@dataclass(frozen=True)
class Project:
    """One generated project: its name, kind and files (path -> text)."""

    name: str
    kind: str
    module_path: str
    test_path: str
    files: dict[str, str]


def slots(rng: random.Random) -> dict[str, object]:
    """The seed's values for the `{x}` slots of a kind's test cases."""
    a, b, c, d = sorted(rng.sample(range(2, 60), 4))
    w1, w2, w3 = rng.sample(NAMES, 3)
    return {"a": a, "b": b, "c": c, "d": d, "w1": w1, "w2": w2, "w3": w3, "W1": w1.capitalize(),
            "n": rng.randint(8, 14), "k": rng.randint(1, 25), "p": rng.randint(2, 20), "q": rng.randint(2, 20),
            "x": rng.choice([0, 1]), "y": rng.choice([0, 1])}


def make_project(kind: str, seed: int) -> Project:
    """Writes project `kind` for `seed`: a package with one module and a test file whose expected values come from
    running that module.

    :raises KeyError: an unknown kind
    """
    source, cases = KINDS[kind]
    rng = random.Random(f"{kind}:{seed}")
    values = slots(rng)
    package = f"{kind}_{rng.choice(PACKAGES)}"
    helpers = HELPERS.get(kind, "").format(**values)
    namespace: dict[str, object] = {}
    exec(compile(source + helpers, f"<{package}>", "exec"), namespace)  # the reference module: computes expectations
    names = [line.split(":", 1)[0].split(maxsplit=1)[-1] for line in source.splitlines()
             if line.startswith(("def ", "class ")) and not line.startswith("def _")]
    names = [n.split("(")[0] for n in names]
    lines = ['"""Tests of the package; generated with the expected values of its reference implementation."""', "",
             f"from {package}.core import {', '.join(names)}"]
    if helpers:
        lines.append(helpers.rstrip("\n"))
    for case in cases.format(**values).splitlines():
        test_name, exprs = case.split(":", 1)
        lines += ["", "", f"def {test_name}():"]
        for expr in (e.strip() for e in exprs.split(";")):
            expected = eval(expr, namespace)  # noqa: S307 - our own generated module
            lines.append(f"    assert {expr} == {expected!r}")
    module_path, test_path = f"{package}/core.py", "tests/test_core.py"
    files = {f"{package}/__init__.py": "", module_path: source, test_path: "\n".join(lines) + "\n",
             "tests/__init__.py": "", "pytest.ini": "[pytest]\ntestpaths = tests\n",
             "README.md": f"# {package}\n\n{source.splitlines()[0].strip(chr(34))}\n\nTests: `python3 -m pytest`.\n"}
    return Project(name=f"{kind}-{seed}", kind=kind, module_path=module_path, test_path=test_path, files=files)
