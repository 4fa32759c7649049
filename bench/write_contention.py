"""One user's long batch beside the same user's small writes: do the small ones wait?

    .venv/bin/python -m bench.write_contention                  # 10,000 memories in one call, 8 putting threads
    .venv/bin/python -m bench.write_contention --batch 20000 --threads 8
    .venv/bin/python -m bench.write_contention --langgraph 10   # LangGraph's large-batch pattern, 10 runs

The first scenario: a user with ``--existing`` memories; one thread adds ``--batch`` memories in
one ``add_memories`` call (the hashing embedder), while ``--threads`` threads ``put`` items to the
same user through ``PgMemStore`` until the batch is done. It reports the batch's time, every put's
latency (p50, p99, max), the puts that failed, and the integrity check of the statistics after.

``--langgraph N`` runs, N times, the pattern of LangGraph's own ``test_large_batches_async``
(10 rounds of ``--keys`` keys, each key put, read, listed, searched, put again and deleted, 60,000
calls gathered at once for 1,000 keys), and counts failed runs. Each scenario uses a fresh database on the development server; results go to
bench/results/write-contention-<date>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import threading
import time
from pathlib import Path
from typing import Any

from bench import harness
from bench.harness import fresh_database, percentiles
from hello_pgmem import Database, HashingEmbedder
from hello_pgmem.integrations.langgraph import PgMemStore
from hello_pgmem.memory import MemoryManager
from hello_pgmem.ops.check import check_integrity

RESULTS = Path(__file__).resolve().parent / "results"
WORDS = [
    "harbour",
    "kitchen",
    "cello",
    "Berlin",
    "garden",
    "recipe",
    "ferry",
    "boots",
    "Alps",
    "hiking",
    "market",
    "river",
]


def text(i: int) -> str:
    return f"note {i}: " + " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(6)) + f" #{i % 97}"


def manager(db: Database, user: str) -> MemoryManager:
    return MemoryManager.of_types(user, ["episodic"], database=db, embedder=HashingEmbedder())


def batch_beside_puts(settings: Any, batch: int, threads: int, existing: int) -> dict[str, Any]:
    """One add_memories of ``batch`` rows while ``threads`` threads put to the same user."""
    with Database(settings) as db:
        owner = manager(db, "contended")
        for start in range(0, existing, 1000):
            owner.add_memories([text(i) for i in range(start, min(existing, start + 1000))])
        wait = getattr(owner, "wait_for_embeddings", None)
        if wait is not None:
            wait()
        done = threading.Event()
        latencies: list[float] = []
        errors: list[str] = []
        lock = threading.Lock()

        def put(thread: int) -> None:
            store = PgMemStore(manager(db, "contended"))
            n = 0
            while not done.is_set():
                started = time.perf_counter()
                try:
                    store.put(("notes", f"t{thread}"), f"k{n}", {"text": text(100_000 + thread * 10_000 + n)})
                except Exception as exc:  # counted and reported
                    with lock:
                        errors.append(f"{type(exc).__name__}: {exc}"[:200])
                with lock:
                    latencies.append((time.perf_counter() - started) * 1000)
                n += 1

        workers = [threading.Thread(target=put, args=(t,)) for t in range(threads)]
        for worker in workers:
            worker.start()
        time.sleep(0.5)
        started = time.perf_counter()
        owner.add_memories([text(existing + i) for i in range(batch)])
        batch_s = time.perf_counter() - started
        done.set()
        for worker in workers:
            worker.join()
        if wait is not None:
            wait()
        report = check_integrity(db)
    return {
        "batch": batch,
        "threads": threads,
        "existing": existing,
        "batch_s": round(batch_s, 2),
        "puts": len(latencies),
        "put_ms": {k: round(v, 1) for k, v in percentiles(latencies).items()},
        "put_max_ms": round(max(latencies), 1),
        "errors": len(errors),
        "error_sample": errors[:3],
        "integrity": [f"{v.check}: {v.count}" for v in report.violations],
    }


async def large_batches(store: PgMemStore, n: int, m: int = 10) -> None:
    """LangGraph's test_large_batches_async as its checkpoint-postgres suite runs it: for each of
    ``m`` rounds and ``n`` keys, a put, a get, a namespace listing, a search, a second put and a
    delete of the key, all gathered at once."""
    calls: list[Any] = []
    for round_ in range(m):
        namespace = ("test", "foo", "bar", "baz", str(round_ % 2))
        for i in range(n):
            value = {"foo": f"bar{i}"}
            calls += [
                store.aput(namespace, f"key{i}", value=value),
                store.aget(namespace, f"key{i}"),
                store.alist_namespaces(prefix=None, max_depth=round_ + 1),
                store.asearch(("test",)),
                store.aput(namespace, f"key{i}", value=value),
                store.adelete(namespace, f"key{i}"),
            ]
    results = await asyncio.gather(*calls)
    assert len(results) == m * n * 6


def langgraph_runs(settings: Any, runs: int, keys: int) -> dict[str, Any]:
    failed: list[str] = []
    seconds: list[float] = []
    with Database(settings) as db:
        for run in range(runs):
            store = PgMemStore(manager(db, f"lg_{run}"))
            started = time.perf_counter()
            try:
                asyncio.run(large_batches(store, keys))
            except Exception as exc:  # counted and reported
                failed.append(f"{type(exc).__name__}: {exc}"[:200])
            seconds.append(time.perf_counter() - started)
        report = check_integrity(db)
    return {
        "runs": runs,
        "failed": len(failed),
        "failures": failed[:3],
        "seconds": [round(s, 1) for s in seconds],
        "integrity": [f"{v.check}: {v.count}" for v in report.violations],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--existing", type=int, default=2_000)
    parser.add_argument("--langgraph", type=int, default=0, help="runs of LangGraph's large-batch pattern")
    parser.add_argument(
        "--keys", type=int, default=1000, help="keys per round of that pattern (LangGraph's N)"
    )
    args = parser.parse_args()
    result: dict[str, Any] = {"machine": harness.machine()}
    with fresh_database(embed_model_type="hashing") as settings:
        result["batch_beside_puts"] = batch_beside_puts(settings, args.batch, args.threads, args.existing)
        print(json.dumps(result["batch_beside_puts"], indent=2))
    if args.langgraph:
        with fresh_database(embed_model_type="hashing") as settings:
            result["langgraph"] = langgraph_runs(settings, args.langgraph, args.keys)
            print(json.dumps(result["langgraph"], indent=2))
    RESULTS.mkdir(exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M")
    (RESULTS / f"write-contention-{stamp}.json").write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
