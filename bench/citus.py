"""Episodic adds and searches on the local Citus cluster beside one server, on the same machine.

    PGMEM_CITUS_SOURCE=/path/to/citus-14.0.1.tar.gz .venv/bin/python -m bench.citus
    .venv/bin/python -m bench.citus --users 10 --per-user 1000 --queries 200

Both deployments get a fresh database migrated without AGE (the cluster's also distributed by
``hello-pgmem citus distribute``), the same memories (bench/workload.py, hashing embedder, 384
dimensions) added through the public API in batches of 100 and, for a sample, one by one; then
warm searches through ``retrieve_memories`` (hybrid, the default, and ``scoring="vector"``),
questions spread over the users. Reported: adds/s, search p50/p95/p99, the tasks a user's search
and a user's add touch (EXPLAIN on the coordinator), and per-shard sizes, from which a paper
estimate of capacity per worker is made. All four PostgreSQL servers share this machine's cores:
a cluster cannot be faster here, the ratio is what the cluster's extra hop costs.
Writes bench/results/citus-<date>.json and prints a table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import harness
from bench.harness import fresh_database, percentiles
from bench.workload import Workload
from hello_pgmem import Database, HashingEmbedder, MemoryManager, Settings
from hello_pgmem.db import migrations
from hello_pgmem.dev.chroot import DevDB
from hello_pgmem.dev.citus import CitusCluster

RESULTS = Path(__file__).resolve().parent / "results"
K = 10
BATCH = 100

TASKS = """
EXPLAIN (FORMAT JSON) SELECT id FROM memories
WHERE user_id = %(user)s AND embedding_model = %(model)s AND forgotten_at IS NULL
ORDER BY embedding::vector(384) <=> %(q)s::vector(384) LIMIT 10
"""
SHARD_SIZES = """
SELECT count(*), sum(shard_size), min(shard_size), max(shard_size)
FROM citus_shards WHERE table_name = 'pgmem.memories'::regclass
"""
SINGLE_SIZE = "SELECT pg_total_relation_size('pgmem.memories')"


@contextmanager
def cluster_database() -> Iterator[Settings]:
    """A fresh database on the cluster's nodes, migrated and distributed; dropped afterwards."""
    cluster = CitusCluster(DevDB.from_env())
    cluster.up()
    name = f"pgmem_bench_{uuid.uuid4().hex[:8]}"
    cluster.create_database(name)
    try:
        settings = Settings(database_url=cluster.url(name), age="off", pool_max_size=4)
        migrations.upgrade(settings)  # distributes the schema on a coordinator
        yield settings
    finally:
        cluster.drop_database(name)


def add_all(db: Database, embedder: HashingEmbedder, users: list[str], per_user: int) -> dict[str, Any]:
    """Every user's memories in batches of BATCH; then a sample added one by one."""
    batch_seconds = single_seconds = 0.0
    added = singles = 0
    for number, user in enumerate(users):
        manager = MemoryManager.of_types(user, ["episodic"], database=db, embedder=embedder)
        texts = [content for content, _ in Workload(number).memories(per_user + 20)]
        for start in range(0, per_user, BATCH):
            chunk = texts[start : start + BATCH]
            began = time.perf_counter()
            manager.add_memories(chunk, "episodic")
            batch_seconds += time.perf_counter() - began
            added += len(chunk)
        for text in texts[per_user:]:
            began = time.perf_counter()
            manager.add_memory(text, "episodic")
            single_seconds += time.perf_counter() - began
            singles += 1
    return {
        "batch_adds_per_s": added / batch_seconds,
        "single_adds_per_s": singles / single_seconds,
        "memories": added + singles,
    }


def search_all(
    db: Database, embedder: HashingEmbedder, asked: list[tuple[str, str]], scoring: str
) -> dict[str, Any]:
    managers = {
        user: MemoryManager.of_types(user, ["episodic"], database=db, embedder=embedder)
        for user in {u for u, _ in asked}
    }
    for user, question in asked[:20]:  # warm-up
        managers[user].retrieve_memories(question, limit=K, scoring=scoring)
    latencies, returned = [], []
    for user, question in asked:
        began = time.perf_counter()
        found = managers[user].retrieve_memories(question, limit=K, scoring=scoring)
        latencies.append((time.perf_counter() - began) * 1000)
        returned.append(len(found))
    return {"latency_ms": percentiles(latencies), "rows_min": min(returned)}


def shape(db: Database, embedder: HashingEmbedder, user: str, citus: bool) -> dict[str, Any]:
    """Tasks of a user's nearest-neighbour query; sizes of the memories table (per shard)."""
    with db.connection() as conn:
        if not citus:
            row = conn.execute(SINGLE_SIZE).fetchone()
            return {"memories_bytes": int(row[0]) if row else 0}
        plan = conn.execute(
            TASKS, {"user": user, "model": embedder.model_name, "q": embedder.encode_query("notebook")}
        ).fetchone()
        job = plan[0][0]["Plan"]["Distributed Query"]["Job"] if plan else {}
        shards, total, smallest, largest = conn.execute(SHARD_SIZES).fetchone() or (0, 0, 0, 0)
    return {
        "search_task_count": job.get("Task Count"),
        "shards": int(shards),
        "memories_bytes": int(total),
        "shard_bytes_min": int(smallest),
        "shard_bytes_max": int(largest),
    }


def run(kind: str, users: list[str], per_user: int, queries: int) -> dict[str, Any]:
    embedder = HashingEmbedder()
    where = cluster_database() if kind == "citus" else fresh_database(age="off", pool_max_size=4)
    pick, held_out = random.Random(7), Workload(10_000)
    asked = [(pick.choice(users), held_out.memory()) for _ in range(queries)]
    with where as settings, Database(settings) as db:
        result: dict[str, Any] = {"adds": add_all(db, embedder, users, per_user)}
        with db.connection() as conn:
            conn.execute("ANALYZE")
        result["hybrid"] = search_all(db, embedder, asked, "hybrid")
        result["vector"] = search_all(db, embedder, asked, "vector")
        result["shape"] = shape(db, embedder, users[0], kind == "citus")
    return result


def capacity(single: dict[str, Any], citus: dict[str, Any]) -> dict[str, Any]:
    """A paper estimate per worker from the measured numbers: bytes per memory with its indexes
    (the larger of the two deployments'), and searches per core from the p50 latencies (which
    include the client's own work, so a worker core does at least this many)."""
    per_memory = max(
        deployment["shape"]["memories_bytes"] / deployment["adds"]["memories"]
        for deployment in (single, citus)
    )
    return {
        "bytes_per_memory_single": single["shape"]["memories_bytes"] / single["adds"]["memories"],
        "bytes_per_memory_citus_shards": citus["shape"]["memories_bytes"] / citus["adds"]["memories"],
        "memories_per_64GiB_worker_in_memory": int(64 * 2**30 * 0.75 / per_memory),
        "hybrid_searches_per_s_per_core": {
            kind: 1000 / deployment["hybrid"]["latency_ms"]["p50"]
            for kind, deployment in (("single", single), ("citus", citus))
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--per-user", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    users = [f"user{u:03d}" for u in range(args.users)]
    report: dict[str, Any] = {"machine": harness.machine(), "users": args.users, "per_user": args.per_user}
    for kind in ("single", "citus"):
        report[kind] = run(kind, users, args.per_user, args.queries)
    report["capacity"] = capacity(report["single"], report["citus"])
    for kind in ("single", "citus"):
        result = report[kind]
        print(
            f"{kind:7s} batch adds/s {result['adds']['batch_adds_per_s']:7.0f}"
            f"  single adds/s {result['adds']['single_adds_per_s']:6.0f}"
            f"  hybrid p50 {result['hybrid']['latency_ms']['p50']:6.2f} p99 {result['hybrid']['latency_ms']['p99']:6.2f}"
            f"  vector p50 {result['vector']['latency_ms']['p50']:6.2f} p99 {result['vector']['latency_ms']['p99']:6.2f}"
            f"  rows>={min(result['hybrid']['rows_min'], result['vector']['rows_min'])}",
            flush=True,
        )
    print(json.dumps({"shape": report["citus"]["shape"], "capacity": report["capacity"]}, indent=2))
    RESULTS.mkdir(exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M")
    (RESULTS / f"citus-{stamp}.json").write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
