"""Search as users run it, beside plain pgvector: many users in one table, the public API.

    .venv/bin/python -m bench.multiuser                 # 10x1k, 100x1k, 10x10k, 1x100k (about 15 min)
    .venv/bin/python -m bench.multiuser --scenarios 10x1k --queries 100
    .venv/bin/python -m bench.multiuser --scenarios 1x1000k --keep   # once: an hour and more
    .venv/bin/python -m bench.multiuser --scenarios 1x1000k --database URL   # again, on that database

Each scenario is a fresh database, bulk-loaded with COPY (bench/workload.py's memories, hashing
embedder, 384 dimensions). For each: plain pgvector (`WHERE user_id = … ORDER BY embedding <=> q
LIMIT 10` on the same partial HNSW index, iterative scan on), the same query returning each
memory's fields and cosine as the API returns them (``PLAIN_ROWS``), and hello_pgmem's
`retrieve_memories` through the public API (hybrid ranking, the default: the hashing embedder's
`weighted` fusion; the `spread` fusion that every model of meaning gets, over the same hashing
vectors; and `scoring="vector"`; the vector and spread searches again through a store whose writes
queue their vectors, the path of every model whose vectors come after the write); and the hybrid SQL a pgvector user writes by hand (``HAND_HYBRID``, on a
generated tsvector column present during the load, and its GIN index); warm, queries spread over
the users, held-out memories as questions. Each hand-written query runs twice: one statement
each on a connection whose settings were made once (the bare query), and in a transaction of
their own that sets the scan (BEGIN, SET LOCAL, the query, COMMIT: how issue 28 measured them,
and what an application that scopes each request runs). Each ratio is to the hand-written
counterpart, both ways (the hybrids to the hand-written hybrid, vector scoring to plain
pgvector). Reported:
p50/p95/p99, rows returned, rows of `memories` updated by the searches (pg_stat_user_tables), and
the recall@10 of the hybrid and vector rankings against the same function with the vector branch
exact (by id, with identical texts interchangeable, and with memories at the same distance
interchangeable).
Writes bench/results/multiuser-<date>.json and prints a table. `--keep` keeps a scenario's
database (its URL is printed) for `--database`, which times the searches again on it, without the
load (migrated to this checkout first), and for bench/search_ab.py.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from psycopg.rows import tuple_row

from bench import harness
from bench.harness import percentiles
from bench.scenarios import BY_HAND, K, by_hand, loaded, questions, users_of
from hello_pgmem import Database, HashingEmbedder, MemoryConfig, MemoryManager
from hello_pgmem.core.models import Fusion

RESULTS = Path(__file__).resolve().parent / "results"

OWN = ", own transaction"
"""The suffix of a hand-written query's name when it runs in a transaction of its own."""
QUEUED: list[tuple[str, str, Fusion | None]] = [
    ("hello_pgmem vector, queued model", "vector", None),
    ("hello_pgmem hybrid, spread, queued model", "hybrid", "spread"),
]
"""The searches timed again through a store whose writes queue their vectors."""
RANKED = """
SELECT s.id, m.content, round((1 - (m.embedding::vector(384) <=> %(q)s::vector(384)))::numeric, 6) AS cosine
FROM search_memories(%(user)s, %(model)s, %(q)s, %(text)s, %(k)s, memory_filter(ARRAY['episodic']),
                     p_mode => %(mode)s) s
JOIN memories m ON m.user_id = %(user)s AND m.id = s.id
"""
UPDATES = "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'memories'"


def updated_rows(db: Database) -> int:
    time.sleep(1.2)  # statistics reach the shared view at most once a second
    with db.connection() as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(UPDATES).fetchone()
    return int(row[0]) if row else 0


def through_the_api(
    db: Database,
    embedder: HashingEmbedder,
    asked: list[tuple[str, str]],
    scoring: str,
    fusion: Fusion | None = None,
) -> dict[str, Any]:
    """retrieve_memories' latency; ``fusion`` None is the embedder's own (weighted for hashing),
    "spread" the one every model of meaning gets."""
    managers: dict[str, MemoryManager] = {}
    config = MemoryConfig(fusion=fusion)

    def manager(user: str) -> MemoryManager:
        if user not in managers:
            managers[user] = MemoryManager.of_types(
                user, ["episodic"], config=config, database=db, embedder=embedder
            )
        return managers[user]

    for user, question in asked[:20]:  # warm-up
        manager(user).retrieve_memories(question, limit=K, scoring=scoring)
    before = updated_rows(db)
    latencies, returned = [], []
    for user, question in asked:
        started = time.perf_counter()
        found = manager(user).retrieve_memories(question, limit=K, scoring=scoring)
        latencies.append((time.perf_counter() - started) * 1000)
        returned.append(len(found))
    return {
        "latency_ms": percentiles(latencies),
        "rows_min": min(returned),
        "memories_rows_updated": updated_rows(db) - before,
    }


def ranking_recall(
    db: Database, embedder: HashingEmbedder, asked: list[tuple[str, str]], mode: str
) -> dict[str, float]:
    """Recall@10 of search_memories (``mode``: hybrid or vector) against itself with the vector
    branch exact (no HNSW): by id, with identical texts interchangeable (the workload repeats
    texts at a million memories, and identical texts tie on every component but the time), and
    with memories at the same distance interchangeable (the hashing embedder gives texts of the
    same words one vector, and an exact scan keeps any of them: the ANN notion of recall)."""
    measures = {"by_id": 0, "identical_texts_interchangeable": 1, "same_distance_interchangeable": 2}
    shares: dict[str, list[float]] = {name: [] for name in measures}  # name -> per question
    with db.connection() as conn:
        conn.row_factory = tuple_row
        for user, question in asked:
            params = {"user": user, "model": embedder.model_name, "q": embedder.encode_query(question)}
            params.update(text=question, k=K, mode=mode)
            conn.execute("SELECT set_config('pgmem.user_id', %s, false)", (user,))
            fast = conn.execute(RANKED, params).fetchall()
            conn.execute("SET enable_indexscan = off")  # HNSW serves only index scans
            exact = conn.execute(RANKED, params).fetchall()
            conn.execute("RESET enable_indexscan")
            size = max(1, len(exact))
            for name, column in measures.items():  # rows of the exact answer found, equal by column
                shared = Counter(row[column] for row in fast) & Counter(row[column] for row in exact)
                shares[name].append(sum(shared.values()) / size)
        conn.rollback()
    return {name: float(np.mean(values)) for name, values in shares.items()}


def scenario(name: str, queries: int, database: str | None = None, keep: bool = False) -> dict[str, Any]:
    users = users_of(name)
    users_count = len(users)
    embedder = HashingEmbedder()
    with loaded(name, database, keep) as (db, load):
        asked = questions(list(users), queries, seed=users_count)
        result: dict[str, Any] = {"users": users_count, "per_user": users["user000"], "load": load}
        for suffix in ("", OWN):
            for system, statement in BY_HAND.items():
                result[system + suffix] = by_hand(db, embedder, asked, statement, bool(suffix))
        result["hello_pgmem hybrid"] = through_the_api(db, embedder, asked, "hybrid")
        result["hello_pgmem hybrid, spread"] = through_the_api(db, embedder, asked, "hybrid", "spread")
        result["hello_pgmem vector"] = through_the_api(db, embedder, asked, "vector")
        # the path of a model whose vectors come after the write (E5, MiniLM, an API): the same
        # searches through a store that queues (nothing waits: the load embedded every row)
        queued = db.settings.model_copy(update={"embed": "queue", "embedding_queue_workers": 0})
        with Database(queued) as queued_db:
            for system, scoring, fusion in QUEUED:
                result[system] = through_the_api(queued_db, embedder, asked, scoring, fusion)
        for mode in ("hybrid", "vector"):
            result[f"{mode} recall@10 vs exact"] = ranking_recall(
                db, embedder, asked[: min(50, queries)], mode
            )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenarios", default="10x1k,100x1k,10x10k,1x100k")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--keep", action="store_true", help="keep each scenario's database")
    parser.add_argument(
        "--database", help="time the searches on this database of one scenario, kept by --keep"
    )
    args = parser.parse_args()
    report: dict[str, Any] = {"machine": harness.machine(), "k": K, "scenarios": {}}
    for name in args.scenarios.split(","):
        report["scenarios"][name] = result = scenario(name, args.queries, args.database, args.keep)
        hand_written = [system + suffix for suffix in ("", OWN) for system in BY_HAND]
        for system in (
            *hand_written,
            "hello_pgmem hybrid",
            "hello_pgmem hybrid, spread",
            "hello_pgmem vector",
            *(system for system, _, _ in QUEUED),
        ):
            measured = result[system]
            # each ranking beside its hand-written counterparts: the hybrids, and the vector
            # searches, each as one statement and in a transaction of its own
            kind = "hand-written hybrid" if "hybrid" in system else "plain pgvector"
            ratios = " ".join(
                f"{measured['latency_ms']['p50'] / result[reference]['latency_ms']['p50']:4.2f}x"
                for reference in (kind, kind + OWN)
            )
            print(
                f"{name:8s} {system:44s} p50 {measured['latency_ms']['p50']:6.2f} ms ({ratios})"
                f"  p99 {measured['latency_ms']['p99']:6.2f}  rows>={measured['rows_min']}"
                f"  updated {measured.get('memories_rows_updated', '-')}",
                flush=True,
            )
        for mode in ("hybrid", "vector"):
            measured = result[f"{mode} recall@10 vs exact"]
            print(
                f"{name:8s} {mode} recall@10 vs exact {measured['by_id']:.3f} by id,"
                f" {measured['identical_texts_interchangeable']:.3f} identical texts interchangeable,"
                f" {measured['same_distance_interchangeable']:.3f} same distance interchangeable",
                flush=True,
            )
    RESULTS.mkdir(exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")  # two runs in one minute keep their files
    (RESULTS / f"multiuser-{stamp}.json").write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
