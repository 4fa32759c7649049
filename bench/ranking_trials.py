"""Ranking variants on both benchmarks through the twin (bench/twin.py: search_memories in NumPy),
every development question of LoCoMo and LongMemEval, seconds a variant.

    .venv/bin/python -m bench.ranking_trials                   # the fusions the search has, each embedder
    .venv/bin/python -m bench.ranking_trials --vector-weights  # the vector's weight in each fusion
    .venv/bin/python -m bench.ranking_trials --counts          # questions that ask for a count, by fusion
    .venv/bin/python -m bench.ranking_trials --window-vector   # part of the cosine from the window's vector
    .venv/bin/python -m bench.ranking_trials --embedders hashing   # fewer embedders

The users and questions are bench/twin_users.py's (cached), and the numbers are the database's:
tests/test_ranking_twin.py holds the twin equal to the SQL. They are measured on every question, so
they describe a variant; what the search keeps is chosen on held-out folds (bench/cross_validate.py).
Each cell: LoCoMo R@10 (multi-hop R@10) and LongMemEval session recall_all@5 / turn recall_all@10.
A markdown table is printed; the numbers go to bench/results/ranking-trials-<trials>-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from bench import datasets, harness, twin
from bench.twin_users import FOLDS, User, answers, prepare, summary

RESULTS = Path(__file__).resolve().parent / "results"
NAMES = {"hashing": "hashing", "minilm": "MiniLM", "e5": "E5"}
CURRENT = twin.Weights()
LEXICAL = replace(CURRENT, vector_weighted=0.0, vector_spread=0.0, vector_count=0.0)


@dataclass(frozen=True)
class Variant:
    """A way of ranking every question: a fusion (the embedder's own when None), weights, and whether
    a question that asks for a count takes the minmax fusion (the search's count rule)."""

    weights: twin.Weights
    fusion: twin.Fusion | None = None
    count_rule: bool = True

    def measures(self, embedder: str, users: list[User]) -> dict[str, float]:
        fusion = self.fusion or ("weighted" if embedder == "hashing" else "spread")
        rows = answers(users, self.weights, fusion, self.count_rule)
        return {k: round(v, 1) for k, v in summary(rows, set(range(FOLDS))).items()}


def fusions() -> dict[str, Variant]:
    """Every fusion of the search at its weights, and the lexical ranking alone."""
    return {
        "none (lexical alone)": Variant(LEXICAL),
        f"`weighted`: {CURRENT.vector_weighted} × cosine / best": Variant(CURRENT, "weighted"),
        f"`spread`: {CURRENT.vector_spread} × spread × (1 − held) × (1 − agreement)": Variant(
            CURRENT, "spread", count_rule=False
        ),
        f"`spread`, a count by `minmax` {CURRENT.vector_count}": Variant(CURRENT, "spread"),
        f"`minmax`: {CURRENT.vector_count} × spread, undamped": Variant(CURRENT, "minmax"),
        "`rrf`: reciprocal ranks": Variant(CURRENT, "rrf"),
    }


def vector_weights() -> dict[str, Variant]:
    """The vector's weight in the hashing embedder's fusion (`weighted`) and the models' (`spread`)."""
    out = {
        f"`weighted` {w}": Variant(replace(CURRENT, vector_weighted=w), "weighted")
        for w in (0.1, 0.2, 0.3, 0.5)
    }
    for weight in (0.3, 0.5, 0.7, 1.0, 1.5):
        out[f"`spread` {weight}"] = Variant(replace(CURRENT, vector_spread=weight), "spread")
    return out


def counts() -> dict[str, Variant]:
    """A question that asks for a count ranked as any other, or by `minmax` at a weight."""
    out = {"as any question (`spread`)": Variant(CURRENT, "spread", count_rule=False)}
    for weight in (0.5, 1.0, 1.5, 2.5):
        out[f"`minmax` {weight}"] = Variant(replace(CURRENT, vector_count=weight), "spread")
    return out


def window_vectors() -> dict[str, Variant]:
    """Part of each memory's cosine taken from its context window's mean vector (not in the search)."""
    return {
        "the memory's own" if share == 0 else f"{share} of it the window's": Variant(
            replace(CURRENT, window_vector=share)
        )
        for share in (0.0, 0.25, 0.5, 0.75, 1.0)
    }


TRIALS = {
    "fusions": fusions,
    "vector-weights": vector_weights,
    "counts": counts,
    "window-vector": window_vectors,
}


def cell(numbers: dict[str, float]) -> str:
    return (
        f"{numbers['LoCoMo R@10']} ({numbers['multi-hop']}) "
        f"{numbers['LME session all@5']} / {numbers['LME turn all@10']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embedders", default=",".join(datasets.EMBEDDERS))
    trials = parser.add_mutually_exclusive_group()
    for flag, says in (
        ("--vector-weights", "the vector's weight in each fusion"),
        ("--counts", "a question that asks for a count, by fusion"),
        ("--window-vector", "part of the cosine from the window's vector"),
    ):
        trials.add_argument(flag, dest="trial", action="store_const", const=flag[2:], help=says)
    parser.set_defaults(trial="fusions")
    args = parser.parse_args()
    trial, variants = args.trial, TRIALS[args.trial]()
    data = {name: prepare(name) for name in args.embedders.split(",")}
    print("| variant | " + " | ".join(NAMES.get(n, n) for n in data) + " |")
    print("| --- " * (len(data) + 1) + "|", flush=True)
    results = {}
    for label, variant in variants.items():
        results[label] = {name: variant.measures(name, users) for name, users in data.items()}
        print(f"| {label} | " + " | ".join(cell(results[label][n]) for n in data) + " |", flush=True)
    RESULTS.mkdir(exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M")
    out = {"machine": harness.machine(), "weights": asdict(CURRENT), "variants": results}
    (RESULTS / f"ranking-trials-{trial}-{stamp}.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
