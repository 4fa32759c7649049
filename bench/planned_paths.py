"""What the API's planned statements buy: each search as sent, against search_memories alone.

    .venv/bin/python -m bench.multiuser --scenarios 10x1k --keep      # once, for a database
    .venv/bin/python -m bench.planned_paths --database URL --scenario 10x1k

The API sends an unfiltered search of episodic and semantic memories as a statement planned once
per connection: the vector scoring as one plain statement (``_ranked_queries.vector_ranked``), the
hybrid with its vector pool found by a planned scan and handed to search_memories
(``pooled_hybrid``). This script times, through ``retrieve_memories`` on a multiuser.py database,
each of those against the same search sent as a call of search_memories, which finds its pool with
dynamic SQL planned on every call; the two alternate run by run in one process, on the same 200
questions. It reports the p50 of each run, the hand-written counterparts of multiuser.py in their
own transaction, and the questions whose ten ids differ between the two (none expected).
Writes bench/results/planned-paths-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import time
from pathlib import Path
from typing import Any

from bench import scenarios
from bench.harness import percentiles
from hello_pgmem import Database, HashingEmbedder, MemoryConfig, MemoryManager, Settings
from hello_pgmem.core.models import Fusion
from hello_pgmem.memory import _ranked_queries as rq
from hello_pgmem.memory import _search, _search_sql

RESULTS = Path(__file__).resolve().parent / "results"
PLANNED = _search_sql.statement


def as_a_call(*args: Any, **kwargs: Any) -> _search_sql.SearchSQL:
    """The statement the API would send, replaced by the call of search_memories it stands for."""
    sent = PLANNED(*args, **kwargs)
    if not sent.before:
        return sent
    params = {key: value for key, value in sent.params.items() if key != "pool"}
    text = rq.SEARCH_AND_LOG if "INSERT INTO memory_accesses" in sent.text else rq.SEARCH
    return _search_sql.SearchSQL(text, params, delegated=rq.SEARCH_DELEGATED)


def timed(
    db: Database, asked: list[tuple[str, str]], scoring: str, fusion: Fusion | None
) -> tuple[float, list[Any]]:
    """p50 ms of retrieve_memories over ``asked`` (after 20 to warm up), and each question's ids."""
    embedder = HashingEmbedder()
    managers: dict[str, MemoryManager] = {}
    config = MemoryConfig(fusion=fusion)
    for user, _ in asked:
        if user not in managers:
            managers[user] = MemoryManager.of_types(
                user, ["episodic"], config=config, database=db, embedder=embedder
            )
    for user, question in asked[:20]:
        managers[user].retrieve_memories(question, limit=scenarios.K, scoring=scoring)
    latencies, ids = [], []
    for user, question in asked:
        started = time.perf_counter()
        found = managers[user].retrieve_memories(question, limit=scenarios.K, scoring=scoring)
        latencies.append((time.perf_counter() - started) * 1000)
        ids.append([item.id for item in found])
    return percentiles(latencies)["p50"], ids


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", required=True)
    parser.add_argument("--scenario", default="10x1k", help="the scenario the database holds (multiuser.py)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    users = scenarios.users_of(args.scenario)
    asked = scenarios.questions(list(users), args.queries, seed=len(users))
    searches: list[tuple[str, str, Fusion | None, str]] = [
        ("vector", "vector", None, "plain pgvector"),
        ("hybrid, weighted", "hybrid", None, "hand-written hybrid"),
        ("hybrid, spread", "hybrid", "spread", "hand-written hybrid"),
    ]
    result: dict[str, Any] = {"scenario": args.scenario, "queries": args.queries, "searches": {}}
    with Database(Settings(database_url=args.database, pool_max_size=4)) as db:
        by_hand: dict[str, list[float]] = {name: [] for name in scenarios.BY_HAND}
        for name, scoring, fusion, _ in searches:
            runs: dict[str, list[float]] = {"planned": [], "search_memories": []}
            differ = 0
            for round_ in range(args.rounds):
                order = ["planned", "search_memories"] if round_ % 2 == 0 else ["search_memories", "planned"]
                ids: dict[str, list[Any]] = {}
                for arm in order:
                    setattr(_search, "statement", PLANNED if arm == "planned" else as_a_call)  # noqa: B010
                    p50, ids[arm] = timed(db, asked, scoring, fusion)
                    runs[arm].append(round(p50, 2))
                differ = max(
                    differ, sum(a != b for a, b in zip(ids["planned"], ids["search_memories"], strict=True))
                )
                for hand, statement in scenarios.BY_HAND.items():
                    embedder = HashingEmbedder()
                    latency = scenarios.by_hand(db, embedder, asked, statement, own_transaction=True)
                    by_hand[hand].append(round(latency["latency_ms"]["p50"], 2))
            setattr(_search, "statement", PLANNED)  # noqa: B010
            result["searches"][name] = {**runs, "questions whose ten ids differ": differ}
            print(name, runs, "ids differ on", differ, flush=True)
        result["by hand, own transaction"] = by_hand
        for name, _, _, hand in searches:
            timings = result["searches"][name]
            reference = statistics.median(by_hand[hand])
            timings["ratio to " + hand] = {
                arm: round(statistics.median(timings[arm]) / reference, 2)
                for arm in ("planned", "search_memories")
            }
            print(name, timings["ratio to " + hand], flush=True)
    out = RESULTS / f"planned-paths-{dt.datetime.now(dt.UTC):%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
