"""What row-level security costs: the same operations as the application role and as a superuser.

    .venv/bin/python -m bench.rls_overhead [--users 10] [--per-user 2000]

Builds a deployment the documented way (owner migrates; application role granted), loads
``--users`` x ``--per-user`` episodic memories and a knowledge graph for one user, then times
searches and adds through the library as the application role (bound by the policies) and as a
superuser (who bypasses them) on the same data. Writes bench/results/rls-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from bench.harness import role_deployment
from hello_pgmem import Database, HashingEmbedder, Settings
from hello_pgmem.memory import MemoryManager

REPO = Path(__file__).resolve().parent.parent
TOPICS = ("Python", "PostgreSQL", "Berlin", "Rust", "hiking", "Acme", "咖啡", "北京", "机器学习", "音乐")


def timed(call: Callable[[int], object], runs: int) -> dict[str, float]:
    samples = []
    for i in range(runs):
        started = time.perf_counter()
        call(i)
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return {
        "p50_ms": round(statistics.median(samples), 2),
        "p95_ms": round(samples[int(0.95 * (runs - 1))], 2),
    }


def measure(settings: Settings, users: int, runs: int, writes: bool) -> dict[str, Any]:
    """Searches (``writes=False``) or adds, through the library, as the role of ``settings``."""
    embedder = HashingEmbedder()
    with Database(settings) as db:
        managers = [MemoryManager(user_id=f"u{i}", database=db, embedder=embedder) for i in range(users)]
        graph_user = managers[0]
        for manager in managers[:2]:
            manager.retrieve_memories("warm up", limit=10)
        if not writes:
            return {
                "episodic_search": timed(
                    lambda i: managers[i % users].retrieve_memories(
                        f"{TOPICS[i % 10]} {TOPICS[(i * 3) % 10]}", limit=10, memory_types=["episodic"]
                    ),
                    runs,
                ),
                "semantic_search": timed(
                    lambda i: graph_user.retrieve_memories(
                        TOPICS[i % 10], limit=10, memory_types=["semantic"]
                    ),
                    runs,
                ),
            }
        return {
            "semantic_add": timed(
                lambda i: graph_user.add_memory(
                    f"张三在{TOPICS[i % 10]}认识了李四 {uuid.uuid4().hex[:6]}", "semantic"
                ),
                runs // 2,
            ),
            "episodic_add": timed(
                lambda i: managers[i % users].add_memory(f"{TOPICS[i % 10]} note {i}", "episodic", 0.5), runs
            ),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--per-user", type=int, default=2000)
    parser.add_argument("--graph-memories", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    with role_deployment("pgmem_bench_rls") as (superuser, app_settings):
        started = time.perf_counter()
        with Database(app_settings) as db:
            embedder = HashingEmbedder()
            for i in range(args.users):
                manager = MemoryManager(user_id=f"u{i}", database=db, embedder=embedder)
                for start in range(0, args.per_user, 1000):
                    contents = [
                        f"u{i} {TOPICS[j % 10]} {TOPICS[(j * 7) % 10]} memory {j}"
                        for j in range(start, min(args.per_user, start + 1000))
                    ]
                    manager.add_memories(contents, "episodic", 0.5)
            graph = MemoryManager(user_id="u0", database=db, embedder=embedder)
            for start in range(0, args.graph_memories, 500):
                count = min(500, args.graph_memories - start)
                graph.add_memories(
                    [
                        f"张三在{TOPICS[j % 10]}工作，李四喜欢{TOPICS[(j * 3) % 10]} {j}"
                        for j in range(start, start + count)
                    ],
                    "semantic",
                    0.7,
                )
        load_s = time.perf_counter() - started
        with psycopg.connect(superuser.database_url, autocommit=True) as conn:
            conn.execute("ANALYZE")
        result: dict[str, Any] = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "users": args.users,
            "memories_per_user": args.per_user,
            "graph_memories": args.graph_memories,
            "load_seconds_as_app": round(load_s, 1),
            # reads first, for both roles on the same data; then the adds
            "as_application_role": measure(app_settings, args.users, args.runs, writes=False),
            "as_superuser": measure(superuser, args.users, args.runs, writes=False),
        }
        result["as_application_role"].update(measure(app_settings, args.users, args.runs, writes=True))
        result["as_superuser"].update(measure(superuser, args.users, args.runs, writes=True))
    out = REPO / "bench" / "results" / f"rls-{datetime.now(UTC):%Y%m%d-%H%M}.json"
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
