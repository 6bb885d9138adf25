"""Writes the shipped word problems in the Calc-X layout (`python recipes/calc_x/generate_problems.py`): seeded,
so the files are reproducible. Each row has `id`, `question`, `chain` (the solution in Calc-X's gadget markup),
`result`, `result_float`, `source_ds` (`arclight-generated`) and `level` (1-3: the number of calculator steps)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAMES = ["Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Goran", "Hana", "Ivo", "Jun", "Kemal", "Lea"]
ITEMS = ["apples", "books", "stamps", "marbles", "cards", "shells", "pencils", "stickers"]

Step = tuple[str, float]


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.6f}".rstrip("0").rstrip(".")


def _chain(steps: list[Step]) -> str:
    parts = [f'<gadget id="calculator">{expr}</gadget><output>{_fmt(out)}</output>' for expr, out in steps]
    return " ".join(parts) + f" Final result is <result>{_fmt(steps[-1][1])}</result>"


def level1(rng: random.Random) -> tuple[str, list[Step]]:
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    a, b = rng.randint(12, 480), rng.randint(3, 95)
    if rng.random() < 0.5:
        return f"{name} has {a} {item} and buys {b} more. How many {item} does {name} have now?", [(f"{a}+{b}", a + b)]
    packs, per = rng.randint(3, 40), rng.randint(4, 36)
    question = f"{name} buys {packs} packs of {item} with {per} {item} in each pack. How many {item} is that?"
    return question, [(f"{packs}*{per}", packs * per)]


def level2(rng: random.Random) -> tuple[str, list[Step]]:
    name = rng.choice(NAMES)
    price, count, paid = rng.randint(2, 60) + rng.choice([0, 0.25, 0.5, 0.75]), rng.randint(2, 12), 0
    total = price * count
    paid = (int(total // 50) + 1) * 50
    question = (f"{name} buys {count} tickets at ${_fmt(price)} each and pays with ${paid}. "
                "How much change does {name} get, in dollars?").replace("{name}", name)
    return question, [(f"{count}*{_fmt(price)}", total), (f"{paid}-{_fmt(total)}", paid - total)]


def level3(rng: random.Random) -> tuple[str, list[Step]]:
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    boxes, per, friends = rng.randint(3, 24), rng.randint(6, 48), rng.choice([2, 3, 4, 5, 6, 8])
    kept = rng.randint(1, 30)
    total = boxes * per
    shared = total - kept
    question = (f"{name} has {boxes} boxes of {per} {item}, keeps {kept} and shares the rest equally among "
                f"{friends} friends. How many {item} does each friend get?")
    steps = [(f"{boxes}*{per}", total), (f"{total}-{kept}", shared), (f"{shared}/{friends}", shared / friends)]
    return question, steps


LEVELS: dict[int, Callable[[random.Random], tuple[str, list[Step]]]] = {1: level1, 2: level2, 3: level3}


def generate(count: int, seed: int, prefix: str) -> list[dict]:
    """`count` problems, levels 1, 2, 3 in turn."""
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        level = i % 3 + 1
        question, steps = LEVELS[level](rng)
        answer = steps[-1][1]
        rows.append({"id": f"{prefix}-{i:04d}", "question": question, "chain": _chain(steps), "result": _fmt(answer),
                     "result_float": float(answer), "source_ds": "arclight-generated", "level": level})
    return rows


def main() -> None:
    for split, count, seed in [("train", 300, 1), ("val", 60, 2)]:
        path = HERE / "data" / f"{split}.jsonl"
        path.parent.mkdir(exist_ok=True)
        with open(path, "w", encoding="utf-8") as out:
            for row in generate(count, seed, split):
                out.write(json.dumps(row) + "\n")
        print(f"wrote {count} problems to {path}")


if __name__ == "__main__":
    main()
