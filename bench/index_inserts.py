"""What the HNSW index alone accepts, beside what ``add_memories`` achieves, in one run.

    .venv/bin/python -m bench.index_inserts              # 5,000 memories in batches of 500
    .venv/bin/python -m bench.index_inserts --rows 20000

The same distinct texts and hashing vectors go, in batches of 500 from an empty table, (1) through
``add_memories`` and (2) into a bare table ``(id, embedding)`` with one ``INSERT … SELECT FROM
unnest(…)`` per batch: without an index, with the HNSW index hello_pgmem builds (m = 16,
ef_construction = 64, cosine on ``embedding::vector(384)``), and with m = 8. The bare table with
the index is the ceiling of any add that keeps that index up to date. Prints JSON and writes
bench/results/index-inserts-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from bench import harness
from bench.harness import fresh_database
from bench.workload import Workload
from hello_pgmem import Database, HashingEmbedder, MemoryManager

RESULTS = Path(__file__).resolve().parent / "results"
BATCH = 500
INDEXES = {
    "no index": None,
    "hnsw m=16": "CREATE INDEX ON bench_vectors USING hnsw ((embedding::vector(384)) vector_cosine_ops)"
    " WITH (m = 16, ef_construction = 64)",
    "hnsw m=8": "CREATE INDEX ON bench_vectors USING hnsw ((embedding::vector(384)) vector_cosine_ops)"
    " WITH (m = 8, ef_construction = 64)",
}


def bare_table(url: str, vectors: np.ndarray, index: str | None) -> float:
    """Rows a second into a bare table, in batches, from empty (the table is dropped after)."""
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute("CREATE TABLE bench_vectors (id bigint PRIMARY KEY, embedding vector(384))")
        if index:
            conn.execute(index)
        started = time.perf_counter()
        for start in range(0, len(vectors), BATCH):
            batch = vectors[start : start + BATCH]
            conn.execute(
                "INSERT INTO bench_vectors SELECT * FROM unnest(%s::bigint[], %s::vector[])",
                (list(range(start, start + len(batch))), list(batch)),
            )
        seconds = time.perf_counter() - started
        conn.execute("DROP TABLE bench_vectors")
    return len(vectors) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=5000, help="memories added, in batches of 500")
    args = parser.parse_args()
    embedder = HashingEmbedder()
    work = Workload(4242)
    texts = [work.memory() for _ in range(args.rows)]
    vectors = embedder.encode_documents(texts)
    report: dict[str, Any] = {"machine": harness.machine(), "rows": args.rows, "batch": BATCH}
    with fresh_database() as settings, Database(settings) as db:
        manager = MemoryManager(user_id="adds", database=db, embedder=embedder)
        manager.add_memory("warm-up", "episodic", 0.5)
        started = time.perf_counter()
        for start in range(0, args.rows, BATCH):
            manager.add_memories(texts[start : start + BATCH], "episodic", 0.5)
        report["add_memories_per_s"] = args.rows / (time.perf_counter() - started)
        report["bare_table_per_s"] = {
            name: bare_table(settings.database_url, vectors, index) for name, index in INDEXES.items()
        }
    report["add_memories_share_of_hnsw_m16"] = (
        report["add_memories_per_s"] / report["bare_table_per_s"]["hnsw m=16"]
    )
    print(json.dumps(report, indent=2, default=str))
    RESULTS.mkdir(exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M")
    (RESULTS / f"index-inserts-{stamp}.json").write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
