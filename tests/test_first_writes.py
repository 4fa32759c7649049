"""A brand-new user's first writes, many at once: none fails, none is retried.

One user's writes queue on a lock named by the user from the first statement of the first write
(sql/text.sql, ``lock_writers``), before any statistics row exists to lock. The writers here use
new keys, so nothing else makes them wait for each other: without that lock, two first writes
deadlocked over the term counts.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hello_pgmem import Database, HashingEmbedder
from hello_pgmem.integrations.langgraph import PgMemStore
from hello_pgmem.memory import MemoryManager

THREADS = 8
KEYS = 30
ROUNDS = 3
WORDS = ("hiking", "boots", "Alps", "ferry", "kitchen", "cello", "Berlin", "harbour", "garden", "recipe")


def text(thread: int, key: int) -> str:
    """A text of its own for each write: different lexemes, in a different order per thread."""
    words = [WORDS[(thread * 3 + key + i) % len(WORDS)] for i in range(4)]
    return f"thread {thread} note {key}: {' '.join(words)} {uuid.uuid4().hex[:8]}"


@pytest.fixture()
def retries(caplog: pytest.LogCaptureFixture) -> Iterator[Callable[[], list[str]]]:
    """The retry log's lines so far (a retried conflict logs one)."""
    caplog.set_level(logging.INFO, logger="hello_pgmem.core.retry")
    yield lambda: [r.getMessage() for r in caplog.records if r.name == "hello_pgmem.core.retry"]


def new_user() -> str:
    return f"new_{uuid.uuid4().hex[:10]}"


def in_threads(work: Callable[[int], None]) -> list[BaseException]:
    """Run ``work(thread)`` in THREADS threads released together; the errors they raised."""
    barrier = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def run(thread: int) -> None:
        barrier.wait()
        try:
            work(thread)
        except BaseException as exc:  # collected, asserted on below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def stored(db: Database, user: str) -> int:
    with db.transaction(user) as conn:
        row = conn.execute("SELECT count(*) FROM memories WHERE user_id = %s", (user,)).fetchone()
    return int(row[0]) if row else 0


def test_first_adds_from_eight_threads_need_no_retry(
    clean: Database, retries: Callable[[], list[str]]
) -> None:
    embedder = HashingEmbedder()
    for _ in range(ROUNDS):
        user = new_user()

        def add(thread: int, user: str = user) -> None:
            manager = MemoryManager(user_id=user, database=clean, embedder=embedder)
            for key in range(KEYS):
                manager.add_memory(text(thread, key), "semantic", 0.5)

        assert in_threads(add) == []
        assert stored(clean, user) == THREADS * KEYS
    assert retries() == []


def test_first_puts_of_a_langgraph_store_from_eight_threads(
    clean: Database, retries: Callable[[], list[str]]
) -> None:
    embedder = HashingEmbedder()
    for _ in range(ROUNDS):
        user = new_user()

        def put(thread: int, user: str = user) -> None:
            store = PgMemStore(MemoryManager(user_id=user, database=clean, embedder=embedder))
            for key in range(KEYS):
                store.put(("notes", f"t{thread}"), f"k{key}", {"text": text(thread, key)})

        assert [type(e).__name__ for e in in_threads(put)] == []
        assert stored(clean, user) == THREADS * KEYS
    assert retries() == []


def test_first_async_puts_of_a_langgraph_store(clean: Database, retries: Callable[[], list[str]]) -> None:
    embedder = HashingEmbedder()

    async def scenario(user: str) -> None:
        store = PgMemStore(MemoryManager(user_id=user, database=clean, embedder=embedder))

        async def task(thread: int) -> None:
            for key in range(KEYS):
                await store.aput(("notes", f"t{thread}"), f"k{key}", {"text": text(thread, key)})

        await asyncio.gather(*(task(t) for t in range(THREADS)))

    for _ in range(ROUNDS):
        user = new_user()
        asyncio.run(scenario(user))
        assert stored(clean, user) == THREADS * KEYS
    assert retries() == []


def test_an_eight_way_fan_out_on_a_new_users_first_run(
    clean: Database, retries: Callable[[], list[str]]
) -> None:
    from langgraph.graph import END, START, StateGraph
    from langgraph.store.base import BaseStore
    from typing_extensions import TypedDict

    class State(TypedDict):
        run: int

    def writer(branch: int) -> Callable[..., dict[str, Any]]:
        def write(state: State, *, store: BaseStore) -> dict[str, Any]:
            for key in range(5):
                store.put(("facts", f"b{branch}"), f"r{state['run']}k{key}", {"text": text(branch, key)})
            return {}

        return write

    builder = StateGraph(State)
    for branch in range(THREADS):
        builder.add_node(f"b{branch}", writer(branch))
        builder.add_edge(START, f"b{branch}")
        builder.add_edge(f"b{branch}", END)
    embedder = HashingEmbedder()
    for run in range(10):
        user = new_user()
        store = PgMemStore(MemoryManager(user_id=user, database=clean, embedder=embedder))
        builder.compile(store=store).invoke({"run": run})
        assert stored(clean, user) == THREADS * 5
    assert retries() == []
