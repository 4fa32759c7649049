"""Many writers at once: threads sharing a pool and separate processes, several users, mixed work.

The checks are exact: every acknowledged add is present exactly once unless acknowledged
removed, what consolidation reports moved is what arrived, and the integrity checker is silent.
"""

from __future__ import annotations

import multiprocessing
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest

from hello_pgmem import Database, HashingEmbedder, KnowledgeBase, Settings
from hello_pgmem.memory import MemoryManager
from hello_pgmem.ops.check import check_integrity
from tests.conftest import ROOMY, memory_copies
from tests.deployments import ON_CITUS

USERS = ("ann", "ben", "cat")
TOPICS = ("Python", "PostgreSQL", "Berlin", "Rust", "hiking", "Acme")


def workload(url: str, seed: int, user: str, operations: int, db: Database | None = None) -> dict[str, Any]:
    """Random mixed operations for ``user``; what was acknowledged, and any error that escaped."""
    rng = random.Random(seed)
    own = db is None
    database = db or Database(Settings(database_url=url, pool_max_size=2))
    manager = MemoryManager(ROOMY, user_id=user, database=database, embedder=HashingEmbedder())
    knowledge = KnowledgeBase(database, HashingEmbedder(), f"ns_{user}")
    added: list[str] = []
    long_term: list[str] = []  # only these are removed, so every consolidated row stays countable
    removed: list[str] = []
    moved = 0
    errors: list[str] = []
    try:
        for step in range(operations):
            topic = rng.choice(TOPICS)
            kind = rng.choice(("working", "working", "episodic", "semantic"))
            action = rng.choice(
                ("add", "add", "add", "search", "update", "remove", "forget", "consolidate", "rag")
            )
            try:
                if action == "add":
                    content = f"{user} {seed}-{step} 在{topic}项目工作，张三负责{topic}"
                    added.append(str(manager.add_memory(content, kind, round(rng.uniform(0.5, 0.9), 2))))
                    if kind != "working":
                        long_term.append(added[-1])
                elif action == "search":
                    manager.retrieve_memories(topic, limit=5)
                elif action == "update" and added:
                    manager.update_memory(rng.choice(added), importance=round(rng.uniform(0.5, 0.9), 2))
                elif action == "remove" and long_term:
                    victim = rng.choice(long_term)
                    if victim not in removed and manager.remove_memory(victim):
                        removed.append(victim)
                elif action == "forget":
                    manager.forget_memories("importance_based", threshold=0.3)  # below every importance
                elif action == "consolidate":
                    moved += manager.consolidate_memories("working", "episodic", importance_threshold=0.7)
                elif action == "rag":
                    knowledge.add_text(
                        f"# {topic}\n\n{user} 的 {topic} 笔记 {step}", document_id=f"doc{step % 3}"
                    )
                    knowledge.search(topic, top_k=3)
            except Exception as exc:  # the test counts every error that escapes
                errors.append(f"{action}: {type(exc).__name__}: {exc}")
    finally:
        if own:
            database.close()
    return {"added": added, "removed": removed, "moved": moved, "errors": errors}


def _in_process(args: tuple[str, int, str, int]) -> dict[str, Any]:
    return workload(*args)


def test_threads_and_processes_mixed_operations(clean: Database) -> None:
    url = clean.settings.database_url
    spawn = multiprocessing.get_context("spawn")
    jobs = [(url, 100 + i, USERS[i % len(USERS)], 60) for i in range(2)]
    with spawn.Pool(2) as pool:
        from_processes = pool.map_async(_in_process, jobs)
        with ThreadPoolExecutor(max_workers=4) as threads:
            from_threads = list(
                threads.map(lambda i: workload(url, i, USERS[i % len(USERS)], 60, clean), range(4))
            )
        results = from_threads + from_processes.get(timeout=600)
    errors = [e for r in results for e in r["errors"]]
    assert errors == [], errors
    owners = [USERS[i % len(USERS)] for i in range(4)] + [job[2] for job in jobs]
    for user in USERS:
        mine = [r for r, owner in zip(results, owners, strict=True) if owner == user]
        added = {i for r in mine for i in r["added"]}
        removed = {i for r in mine for i in r["removed"]}
        rows = memory_copies(clean, user)
        assert all(count == 1 for count in rows.values()), "no memory exists twice"
        assert set(rows) == added - removed, "every acknowledged add is there, every removal is not"
    total_moved = sum(r["moved"] for r in results)
    with clean.transaction(all_rows=True) as conn:
        arrived = conn.execute(
            "SELECT count(*) FROM memories WHERE metadata->>'consolidated_from' = 'working'"
        ).fetchone()
    assert arrived == (total_moved,), "consolidation reported exactly what it moved"
    report = check_integrity(clean)
    assert report.ok, report.text()


@pytest.mark.parametrize("round_", range(3))
def test_consolidate_and_forget_racing_on_the_same_rows(clean: Database, round_: int) -> None:
    """Working memories at 0.6: one thread moves those ≥ 0.5, another forgets those < 0.7."""
    manager = MemoryManager(ROOMY, user_id="racer", database=clean, embedder=HashingEmbedder())
    ids = {str(manager.add_memory(f"任务 {round_}-{i} 关于 Python", "working", 0.6)) for i in range(40)}
    working = MemoryManager.of_types(
        "racer", ["working"], config=ROOMY, database=clean, embedder=HashingEmbedder()
    )
    barrier = threading.Barrier(4)
    outcomes: dict[str, list[int]] = {"moved": [], "forgotten": []}

    def consolidate() -> None:
        barrier.wait()
        outcomes["moved"].append(
            manager.consolidate_memories("working", "episodic", importance_threshold=0.5)
        )

    def forget() -> None:
        barrier.wait()
        outcomes["forgotten"].append(working.forget_memories("importance_based", 0.7, 1))

    with ThreadPoolExecutor(max_workers=4) as pool:
        for future in [pool.submit(f) for f in (consolidate, consolidate, forget, forget)]:
            future.result()
    rows = memory_copies(clean, "racer")
    moved, forgotten = sum(outcomes["moved"]), sum(outcomes["forgotten"])
    assert moved + forgotten == len(ids), outcomes
    assert set(rows) <= ids and len(rows) == moved, "a moved memory exists once, a forgotten one not at all"
    assert all(count == 1 for count in rows.values())


def test_a_deadlock_victim_is_retried_and_succeeds(clean: Database, caplog: pytest.LogCaptureFixture) -> None:
    """A real deadlock between an operation and another session: the operation is re-run."""
    from hello_pgmem.core.retry import retry_transient

    manager = MemoryManager(ROOMY, user_id="dora", database=clean, embedder=HashingEmbedder())
    first, second = (manager.add_memory(f"记忆 {i}", "episodic", 0.5) for i in range(2))
    other = psycopg.connect(clean.settings.database_url, autocommit=False)
    if ON_CITUS:  # the deadlock happens on a worker: the setting must reach it
        other.execute("SET LOCAL citus.propagate_set_commands = 'local'")
    # The other session locks first and waits with the longer timeout, so the operation is the
    # victim on one server (its deadlock check runs first) and on Citus (the youngest is cancelled).
    other.execute("SET LOCAL deadlock_timeout = '10s'")
    touch = "UPDATE memories SET importance = %s WHERE user_id = 'dora' AND id = %s"
    other.execute("SET LOCAL search_path = pgmem")
    other.execute(touch, (0.6, second))
    attempts: list[int] = []

    def interferer() -> None:
        other.execute(touch, (0.6, first))
        other.commit()

    class Operation:
        db = clean

        @retry_transient
        def touch_both(self) -> None:
            attempts.append(1)
            with self.db.transaction("dora") as conn:
                conn.execute(touch, (0.7, first))
                if len(attempts) == 1:
                    threading.Thread(target=interferer).start()
                conn.execute(touch, (0.7, second))

    caplog.set_level("INFO", logger="hello_pgmem.core.retry")
    try:
        Operation().touch_both()
    finally:
        other.close()
    assert len(attempts) == 2 and "SQLSTATE 40P01" in caplog.text
    importances = {m.id: m.importance for m in (manager.get_memory(first), manager.get_memory(second)) if m}
    assert importances == {first: 0.7, second: 0.7}, "the retried operation committed last, whole"
