"""The hybrid search's vector pool found by the API's planned statement (``pooled_hybrid``) and
handed to search_memories: the same ranking as the function finding the pool itself, for a user
read through the HNSW index and one read exactly, and nothing handed when the scan is short. A
read-only store sends the planned statements without their INSERT of accesses."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hello_pgmem import Database, HashingEmbedder, MemoryConfig
from hello_pgmem.memory import MemoryManager, MemorySearch
from hello_pgmem.memory import _ranked_queries as rq
from tests.conftest import Clock
from tests.deployments import TestServer
from tests.test_vector_plans import SMALL_USERS, one_connection_over, ran, vector_plan
from tests.test_vector_ranking import sentences, short_scan_database

QUESTION = "garden party with cake"


@pytest.fixture()
def shared_table(test_server: TestServer, new_database: Callable[[], str], clock: Clock) -> Iterator[Database]:
    users = [("large", 400), *((f"small{n}", 30) for n in range(SMALL_USERS))]
    yield from one_connection_over(test_server, new_database, clock, users)


@pytest.fixture()
def short_scans(test_server: TestServer, new_database: Callable[[], str], clock: Clock) -> Iterator[Database]:
    yield from short_scan_database(test_server, new_database, clock, through_index=True)


def by_function(manager: MemoryManager, search: MemorySearch) -> list[tuple[Any, float]]:
    """(id, score) of search_memories finding its vector pool itself, with the API's parameters."""
    shown = manager.search_sql(search)
    rows = manager.db.rows_in_one_trip(manager.user_id, rq.SEARCH, shown.params)
    return [(row[0], round(row[-1], 9)) for row in rows]


def ranked(found: list[Any]) -> list[tuple[Any, float]]:
    return [(item.id, round(item.score or 0.0, 9)) for item in found]


@pytest.mark.parametrize("fusion", ["weighted", "spread"])
def test_the_pool_the_statement_finds_ranks_as_the_function_does(
    shared_table: Database, clock: Clock, fusion: str
) -> None:
    embedder = HashingEmbedder()
    for user, by_index in (("large", True), ("small0", False)):
        config = MemoryConfig(fusion=fusion)  # type: ignore[arg-type]
        manager = MemoryManager(user_id=user, database=shared_table, embedder=embedder, clock=clock, config=config)
        for _ in range(6):  # prepared on the connection: its generic plan
            manager.retrieve_memories(QUESTION, limit=10, track_access=False)
        shown = manager.search_sql(MemorySearch(QUESTION, limit=10))
        assert "p_nearest =>" in shown.text and shown.before, "the hybrid hands its pool"
        found: list[Any] = []

        def search(m: MemoryManager = manager, into: list[Any] = found) -> None:
            into.extend(m.retrieve_memories(QUESTION, limit=10, track_access=False))

        plan = vector_plan(shared_table, search)
        assert ran(plan, "memories_embedding_") == by_index, user
        assert len(found) == 10
        assert ranked(found) == by_function(manager, MemorySearch(QUESTION, limit=10)), user


def test_a_short_scan_hands_no_pool(short_scans: Database, clock: Clock) -> None:
    """An HNSW scan that stops before the pool is full hands nothing: the function finds the pool
    itself, with its exact fallback, and the limit is filled."""
    manager = MemoryManager(user_id="me", database=short_scans, embedder=HashingEmbedder(), clock=clock)
    search = MemorySearch(QUESTION, limit=20)
    shown = manager.search_sql(search)
    with short_scans.transaction("me") as conn:
        for earlier, params in shown.before:
            conn.execute(earlier, params)
        pool = conn.execute(
            "WITH " + shown.text.split("WITH", 1)[1].split("), answer AS", 1)[0] + ") SELECT ids FROM pool",
            shown.params,
        ).fetchall()
    assert pool == [], "the short scan hands no pool"
    found = manager.retrieve_memories(QUESTION, limit=20, track_access=False)
    assert len(found) == 20
    assert ranked(found) == by_function(manager, search)


@pytest.mark.parametrize("scoring", ["hybrid", "vector"])
def test_a_read_only_store_searches_with_the_planned_statements(
    make_manager: Callable[..., MemoryManager], clean: Database, clock: Clock, scoring: str
) -> None:
    """A store that may not write (PGMEM_READ_ONLY, the web view's) sends the planned statements
    without their INSERT of accesses: PostgreSQL refuses any INSERT in a read-only transaction, even
    one that inserts nothing."""
    writer = make_manager()
    writer.add_memories(sentences(30, 3), "episodic", importance=0.5)
    expected = ranked(writer.retrieve_memories(QUESTION, limit=5, scoring=scoring, track_access=False))
    read_only = clean.settings.model_copy(update={"read_only": True})
    with Database(read_only) as db:
        reader = MemoryManager(user_id="alice", database=db, embedder=HashingEmbedder(), clock=clock)
        found = reader.retrieve_memories(QUESTION, limit=5, scoring=scoring, track_access=False)
    assert ranked(found) == expected and len(expected) == 5
