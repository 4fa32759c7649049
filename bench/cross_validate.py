"""Every weight of the hybrid ranking chosen by cross-validation over both benchmarks, with each
embedder; the held-out folds' numbers are the ones to report.

    .venv/bin/python -m bench.cross_validate                       # hashing, MiniLM and E5
    .venv/bin/python -m bench.cross_validate --embedders hashing   # one embedder (its data cached)
    .venv/bin/python -m bench.cross_validate --show                # the current weights' numbers, no search

The ranking is search_memories' own, in NumPy (bench/twin.py; tests/test_ranking_twin.py holds the
two equal), over both benchmarks' users (bench/twin_users.py): with a model of meaning by the spread
fusion (minmax for a question that asks for a count), with the hashing embedder by the weighted one.

Folds: bench/twin_users.py's five, each one LoCoMo conversation and every fifth LongMemEval
question. For each fold, the weights are chosen on the other four: from the current ones, each weight in turn
takes the value of its list that scores best (the mean, over the three embedders, of LoCoMo R@10,
LongMemEval session recall_all@5 and turn recall_all@10), twice round. The chosen weights are then
scored on the held-out fold. Reported: each measure's mean and spread over the five held-out folds,
for the current weights and for the chosen ones, and what each fold chose. Results go to
bench/results/cross-validate-<date>.json.

One set of weights serves every embedder (ranking_weights() is one row): the lexical ones for all,
``vector_weighted`` for the hashing embedder, the spread's for the models of meaning.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing
import os
import statistics
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from bench import datasets, harness, twin
from bench.twin_users import FOLDS, MEASURES, OBJECTIVE, User, answers, prepare, summary

RESULTS = Path(__file__).resolve().parent / "results"
GRID: dict[str, tuple[float, ...]] = {
    "own": (0.0, 0.2, 0.4, 0.6, 0.8),
    "context": (0.0, 0.3, 0.6, 0.9, 1.2),
    "session": (0.0, 0.15, 0.3, 0.45, 0.6),
    "speaker": (0.0, 0.15, 0.3, 0.45),
    "k1": (0.9, 1.2, 1.5, 2.0),
    "b": (0.5, 0.75, 0.9),
    "vector_weighted": (0.0, 0.1, 0.2, 0.3, 0.5),
    "vector_spread": (0.0, 0.3, 0.5, 0.7, 1.0, 1.5),
    "vector_count": (0.0, 0.5, 1.0, 1.5, 2.5),
    "spread_floor": (0.02, 0.05, 0.1),
    "in_time": (0.0, 0.05, 0.1, 0.2, 0.4),
    "recency": (0.0, 0.01, 0.02),
    "importance": (0.0, 0.01, 0.02),
    "nearest": (20, 40, 60),
    "common": (100, 200, 400),
    "lexical_pool": (40, 80, 160),
}
"""Each weight's values tried; 0 removes a component (the search keeps it only if it gains)."""


_DATA: dict[str, list[User]] = {}
"""The users of every embedder, for the worker processes (forked: read, never copied)."""


def _answers_of(name: str, weights: twin.Weights, count_rule: bool) -> list[dict[str, Any]]:
    return answers(_DATA[name], weights, "weighted" if name == "hashing" else "spread", count_rule)


class Evaluations:
    """Each set of weights' per-question answers for every embedder, computed once, the embedders
    in processes of their own."""

    def __init__(self, data: dict[str, list[User]]) -> None:
        self.data = data
        self.seen: dict[tuple[twin.Weights, bool], dict[str, list[dict[str, Any]]]] = {}
        _DATA.update(data)
        self.pool = multiprocessing.get_context("fork").Pool(min(len(data), os.cpu_count() or 1))

    def __enter__(self) -> Evaluations:
        return self

    def __exit__(self, *_: object) -> None:
        self.pool.terminate()

    def of(self, weights: twin.Weights, count_rule: bool = True) -> dict[str, list[dict[str, Any]]]:
        key = (weights, count_rule)
        if key not in self.seen:
            names = list(self.data)
            done = self.pool.starmap(_answers_of, [(name, weights, count_rule) for name in names])
            self.seen[key] = dict(zip(names, done, strict=True))
        return self.seen[key]

    def scores(self, weights: twin.Weights, folds: set[int], count_rule: bool = True) -> list[float]:
        """Each embedder's objective on ``folds``: the mean of the ``OBJECTIVE`` measures."""
        rows = self.of(weights, count_rule).values()
        return [statistics.fmean(summary(r, folds)[m] for m in OBJECTIVE) for r in rows]

    def objective(self, weights: twin.Weights, folds: set[int], count_rule: bool = True) -> float:
        return statistics.fmean(self.scores(weights, folds, count_rule))


def choose(evaluations: Evaluations, folds: set[int], start: twin.Weights, rounds: int = 2) -> twin.Weights:
    """Coordinate ascent on ``folds``: each weight in turn takes its best value of GRID."""
    best, best_score = start, evaluations.objective(start, folds)
    for _ in range(rounds):
        changed = False
        for name, values in GRID.items():
            if name == "vector_weighted" and "hashing" not in evaluations.data:
                continue
            for value in values:
                trial = replace(best, **{name: type(getattr(best, name))(value)})
                score = evaluations.objective(trial, folds)
                if score > best_score + 1e-9:
                    best, best_score, changed = trial, score, True
        if not changed:
            break
    return best


COMPONENTS: dict[str, dict[str, float]] = {
    "the memory's own BM25": {"own": 0.0},
    "its context window's BM25": {"context": 0.0},
    "its session's BM25": {"session": 0.0},
    "a speaker the question names": {"speaker": 0.0},
    "the vector, hashing (weighted)": {"vector_weighted": 0.0},
    "the vector, models of meaning (spread, minmax)": {"vector_spread": 0.0, "vector_count": 0.0},
    "the time range a question names": {"in_time": 0.0},
    "recency": {"recency": 0.0},
    "importance": {"importance": 0.0},
    "the count rule (minmax for a count)": {},
}
"""Each component of the ranking and the weights that remove it (the count rule: no weight, the
question ranked as any other)."""


def select_components(data: dict[str, list[User]], evaluations: Evaluations) -> dict[str, Any]:
    """For each component, each fold decides on the other four whether it stays (it must raise the
    objective there; a tie removes it), and the decision is scored on the held-out fold: the
    held-out gain of the component, and how many folds kept it."""
    current = twin.Weights()
    out = {}
    for component, removal in COMPONENTS.items():
        without = replace(current, **removal)
        count_rule = bool(removal)
        kept, gains = 0, {name: [] for name in data}
        for fold in range(FOLDS):
            training = set(range(FOLDS)) - {fold}
            stays = evaluations.objective(current, training) > evaluations.objective(
                without, training, count_rule
            )
            kept += stays
            for name in data:
                with_it = summary(evaluations.of(current)[name], {fold})
                gone = summary(evaluations.of(without, count_rule)[name], {fold})
                gains[name].append({m: with_it[m] - gone[m] for m in MEASURES})
        out[component] = {"kept in folds": kept, "held-out gain": {n: spread(g) for n, g in gains.items()}}
        print(f"{component}: kept in {kept} of {FOLDS} folds", flush=True)
    return out


WINDOW_VECTOR = (0.25, 0.5, 0.75, 1.0)
"""The shares of the window's mean vector tried beside the memory's own (0: the memory's alone)."""


def select_window_vector(data: dict[str, list[User]], evaluations: Evaluations) -> dict[str, Any]:
    """Whether a vector of each memory's context window (the mean of its members') earns a place:
    each fold takes, on the other four, the share that scores best (0 unless one gains), and the
    choice is scored on the held-out fold against the memory's own vector alone."""
    current = twin.Weights()
    chosen, gains = [], {name: [] for name in data}
    for fold in range(FOLDS):
        training = set(range(FOLDS)) - {fold}
        best, best_score = 0.0, evaluations.objective(current, training)
        for share in WINDOW_VECTOR:
            score = evaluations.objective(replace(current, window_vector=share), training)
            if score > best_score + 1e-9:
                best, best_score = share, score
        chosen.append(best)
        for name in data:
            with_it = summary(evaluations.of(replace(current, window_vector=best))[name], {fold})
            alone = summary(evaluations.of(current)[name], {fold})
            gains[name].append({m: with_it[m] - alone[m] for m in MEASURES})
        print(f"fold {fold}: window vector share {best}", flush=True)
    every = {share: evaluations.scores(replace(current, window_vector=share), set(range(FOLDS)))
             for share in (0.0, *WINDOW_VECTOR)}  # fmt: skip
    return {
        "chosen by fold": chosen,
        "held-out gain": {n: spread(g) for n, g in gains.items()},
        "objective on every question, per embedder": every,
    }


CAPS: dict[str, tuple[tuple[int, ...], int]] = {
    "lexical_pool": ((40, 60, 80, 120, 160), 0),
    "common": ((25, 50, 60, 80, 100, 150), 200),
}
"""Caps that save work, each value tried from the smallest, and what it is held against: no cap
(0) for the windows kept by their BM25; for what makes a term common (the windows a search scans
and scores), the value the ranking has (a larger one scans more; no value is none)."""


def select_caps(
    data: dict[str, list[User]], evaluations: Evaluations, caps: list[str] | None = None
) -> dict[str, Any]:
    """For each cap (of ``caps``, or all), each fold takes on the other four its smallest value with
    which no embedder scores lower than with its reference (``CAPS``), and that choice is scored on
    the held-out fold against the reference."""
    current = twin.Weights()
    out = {}
    for cap in caps or list(CAPS):
        values, reference = CAPS[cap]
        uncapped = replace(current, **{cap: reference})
        chosen, gains = [], {name: [] for name in data}
        for fold in range(FOLDS):
            training = set(range(FOLDS)) - {fold}
            value = _least_cap(evaluations, uncapped, cap, values, training)
            chosen.append(value)
            for name in data:
                with_it = summary(evaluations.of(replace(current, **{cap: value}))[name], {fold})
                without = summary(evaluations.of(uncapped)[name], {fold})
                gains[name].append({m: with_it[m] - without[m] for m in MEASURES})
        out[cap] = {"chosen by fold": chosen, "held-out gain": {n: spread(g) for n, g in gains.items()}}
        print(f"{cap}: folds chose {chosen}", flush=True)
    return out


def _least_cap(
    evaluations: Evaluations, uncapped: twin.Weights, cap: str, values: tuple[int, ...], folds: set[int]
) -> int:
    """The smallest of ``values`` with which no embedder scores lower on ``folds`` than ``uncapped``
    (the reference's own value when none does)."""
    floor = evaluations.scores(uncapped, folds)
    for value in values:
        scores = evaluations.scores(replace(uncapped, **{cap: value}), folds)
        if all(a >= b - 1e-9 for a, b in zip(scores, floor, strict=True)):
            return value
    return int(getattr(uncapped, cap))


def cross_validate(data: dict[str, list[User]], evaluations: Evaluations) -> dict[str, Any]:
    current = twin.Weights()
    held_current: dict[str, list[dict[str, float]]] = {name: [] for name in data}
    held_chosen: dict[str, list[dict[str, float]]] = {name: [] for name in data}
    choices = []
    for fold in range(FOLDS):
        training = set(range(FOLDS)) - {fold}
        chosen = choose(evaluations, training, current)
        choices.append({k: v for k, v in asdict(chosen).items() if v != getattr(current, k)})
        for name in data:
            held_current[name].append(summary(evaluations.of(current)[name], {fold}))
            held_chosen[name].append(summary(evaluations.of(chosen)[name], {fold}))
        print(f"fold {fold}: chose {choices[-1]}", flush=True)
    final = choose(evaluations, set(range(FOLDS)), current)
    return {
        "held_out": {
            name: {
                "current": spread(held_current[name]),
                "chosen": spread(held_chosen[name]),
            }
            for name in data
        },
        "choices": choices,
        "chosen on every fold": {k: v for k, v in asdict(final).items() if v != getattr(current, k)},
        "weights tried": len(evaluations.seen),
    }


def spread(folds: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Each measure's mean and standard deviation over the held-out folds."""
    return {
        m: {
            "mean": round(statistics.fmean(f[m] for f in folds if f[m] == f[m]), 1),
            "sd": round(statistics.pstdev([f[m] for f in folds if f[m] == f[m]]), 1),
        }
        for m in MEASURES
    }


def show(data: dict[str, list[User]], weights: twin.Weights) -> dict[str, Any]:
    """Every measure of ``weights`` and of the lexical ranking alone, on every question."""
    out = {}
    every = set(range(FOLDS))
    for name, users in data.items():
        fusion: twin.Fusion = "weighted" if name == "hashing" else "spread"
        lexical = replace(weights, vector_weighted=0, vector_spread=0, vector_count=0)
        rows = answers(users, weights, fusion)
        out[name] = {
            "hybrid": {k: round(v, 1) for k, v in summary(rows, every).items()},
            "hybrid by fold": spread([summary(rows, {fold}) for fold in every]),
            "lexical": {k: round(v, 1) for k, v in summary(answers(users, lexical, fusion), every).items()},
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embedders", default=",".join(datasets.EMBEDDERS))
    parser.add_argument("--show", action="store_true", help="the current weights' numbers on every question")
    parser.add_argument(
        "--components", action="store_true", help="only each component's keep-or-remove, fold by fold"
    )
    parser.add_argument(
        "--caps",
        nargs="?",
        const=",".join(CAPS),
        help="only each cap's least value, fold by fold (a comma-separated list of caps: all by default)",
    )
    parser.add_argument(
        "--window-vector", action="store_true", help="only whether the window's mean vector earns a share"
    )
    args = parser.parse_args()
    data = {name: prepare(name) for name in args.embedders.split(",")}
    result: dict[str, Any] = {"machine": harness.machine(), "weights": asdict(twin.Weights())}
    result["every question"] = show(data, twin.Weights())
    print(json.dumps(result["every question"], indent=1), flush=True)
    if args.components or args.caps or args.window_vector or not args.show:
        with Evaluations(data) as evaluations:
            if args.components:
                result["components"] = select_components(data, evaluations)
            elif args.caps:
                result["caps"] = select_caps(data, evaluations, args.caps.split(","))
            elif args.window_vector:
                result["window vector"] = select_window_vector(data, evaluations)
            else:
                result["cross-validation"] = cross_validate(data, evaluations)
        shown = result.get("caps") or result.get("window vector") or result.get("cross-validation")
        print(json.dumps(shown, indent=1), flush=True)
    RESULTS.mkdir(exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M")
    (RESULTS / f"cross-validate-{stamp}.json").write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
