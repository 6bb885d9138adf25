"""Writes the shipped multi-hop corpus and questions (`python recipes/rag/generate_data.py`): invented people,
cities, countries, companies and products (so no model knows them beforehand), seeded and reproducible.

- `data/corpus.jsonl`: one passage per entity, `{id, title, text}`;
- `data/train.jsonl`, `data/val.jsonl`: questions in MuSiQue's layout (`id`, `question`, `answer`,
  `answer_aliases`, `answerable`, `paragraphs` with `is_supporting`, `question_decomposition`), 2 hops (`2hop__…`)
  or 3 hops (`3hop__…`), as MuSiQue names its ids.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "kr", "st", "tr", "vel"]
VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ou"]
CODAS = ["", "n", "r", "s", "th", "l", "m", "nd", "sk"]
PROFESSIONS = ["chemist", "painter", "engineer", "composer", "botanist", "architect", "novelist", "astronomer"]
PRODUCT_KINDS = ["lamp", "bicycle", "kettle", "telescope", "loom", "violin", "compass", "typewriter"]


class Names:
    def __init__(self, rng: random.Random):
        self.rng, self.used = rng, set()

    def word(self, syllables: int) -> str:
        while True:
            w = "".join(self.rng.choice(ONSETS) + self.rng.choice(VOWELS) + self.rng.choice(CODAS)
                        for _ in range(syllables)).capitalize()
            if w not in self.used:
                self.used.add(w)
                return w


def build_world(rng: random.Random) -> dict:
    names = Names(rng)
    countries = [names.word(3) + "ia" for _ in range(6)]
    cities = [{"name": names.word(2), "country": rng.choice(countries), "river": names.word(2)} for _ in range(24)]
    people = [{"name": f"{names.word(2)} {names.word(3)}", "city": rng.choice(cities)["name"],
               "job": rng.choice(PROFESSIONS), "year": rng.randint(1820, 1960)} for _ in range(60)]
    companies = [{"name": names.word(2) + " Works", "founder": person["name"], "year": person["year"] + rng.randint(25, 45)}
                 for person in rng.sample(people, 30)]
    products = [{"name": f"the {names.word(2)} {rng.choice(PRODUCT_KINDS)}", "company": rng.choice(companies)["name"]}
                for _ in range(45)]
    return {"countries": countries, "cities": cities, "people": people, "companies": companies, "products": products}


def passages(world: dict) -> dict[str, dict]:
    """Title -> passage."""
    out = {}
    for c in world["cities"]:
        out[c["name"]] = f"{c['name']} is a city in {c['country']}, on the banks of the {c['river']} river."
    for p in world["people"]:
        out[p["name"]] = f"{p['name']} (born {p['year']}) was {_article(p['job'])} {p['job']} born in the city of {p['city']}."
    for c in world["companies"]:
        out[c["name"]] = f"{c['name']} is a manufacturer founded in {c['year']} by the {_job(world, c['founder'])} {c['founder']}."
    for p in world["products"]:
        title = p["name"].removeprefix("the ").title()
        out[title] = f"{p['name'][0].upper()}{p['name'][1:]} is made by {p['company']}."
    return out


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _job(world: dict, name: str) -> str:
    return next(p["job"] for p in world["people"] if p["name"] == name)


def _by(items: list[dict], name: str) -> dict:
    return next(i for i in items if i["name"] == name)


def questions(world: dict, docs: dict[str, dict], rng: random.Random, count: int, prefix: str) -> list[dict]:
    rows = []
    for i in range(count):
        kind = i % 3
        if kind == 0:  # person -> city -> country
            person = rng.choice(world["people"])
            city = _by(world["cities"], person["city"])
            q = f"In which country was {person['name']} born?"
            hops = [(f"Where was {person['name']} born?", city["name"], person["name"]),
                    ("In which country is #1?", city["country"], city["name"])]
        elif kind == 1:  # product -> company -> founder
            product = rng.choice(world["products"])
            company = _by(world["companies"], product["company"])
            q = f"Who founded the company that makes {product['name']}?"
            hops = [(f"Who makes {product['name']}?", company["name"], product["name"].removeprefix("the ").title()),
                    ("Who founded #1?", company["founder"], company["name"])]
        else:  # product -> company -> founder -> city
            product = rng.choice(world["products"])
            company = _by(world["companies"], product["company"])
            founder = _by(world["people"], company["founder"])
            q = f"In which city was the founder of the maker of {product['name']} born?"
            hops = [(f"Who makes {product['name']}?", company["name"], product["name"].removeprefix("the ").title()),
                    ("Who founded #1?", company["founder"], company["name"]),
                    ("Where was #2 born?", founder["city"], founder["name"])]
        support = [title for _, _, title in hops]
        distractors = rng.sample([t for t in docs if t not in support], 4)
        titles = support + distractors
        rng.shuffle(titles)
        paragraphs = [{"idx": n, "title": t, "paragraph_text": docs[t], "is_supporting": t in support}
                      for n, t in enumerate(titles)]
        decomposition = [{"id": j, "question": hq, "answer": ha, "paragraph_support_idx": titles.index(t)}
                         for j, (hq, ha, t) in enumerate(hops)]
        rows.append({"id": f"{len(hops)}hop__{prefix}{i:04d}", "question": q, "answer": hops[-1][1],
                     "answer_aliases": [], "answerable": True, "paragraphs": paragraphs,
                     "question_decomposition": decomposition})
    return rows


def main() -> None:
    rng = random.Random(7)
    world = build_world(rng)
    docs = passages(world)
    data = HERE / "data"
    data.mkdir(exist_ok=True)
    with open(data / "corpus.jsonl", "w", encoding="utf-8") as out:
        for n, (title, text) in enumerate(docs.items()):
            out.write(json.dumps({"id": f"doc{n:04d}", "title": title, "text": text}) + "\n")
    for split, count in [("train", 240), ("val", 60)]:
        with open(data / f"{split}.jsonl", "w", encoding="utf-8") as out:
            for row in questions(world, docs, rng, count, split):
                out.write(json.dumps(row) + "\n")
    print(f"wrote {len(docs)} passages and 300 questions to {data}")


if __name__ == "__main__":
    main()
