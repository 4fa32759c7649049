"""The planned statements keep one generic plan per connection, made for whichever user searched
first: they must still read a large user through the HNSW index and a small one exactly, and give
the function's ranking, in either order; the hybrid's, with the vector pool it hands the function."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from hello_pgmem import Database, HashingEmbedder, MemoryConfig, Settings
from hello_pgmem.memory import MemoryManager, MemorySearch
from tests.conftest import Clock
from tests.deployments import TestServer
from tests.test_vector_ranking import by_function, hybrid_by_function, nodes, ranked, sentences

SMALL_USERS = 12


def one_connection_over(
    test_server: TestServer, new_database: Callable[[], str], clock: Clock, users: list[tuple[str, int]]
) -> Iterator[Database]:
    """A pool of one connection over ``users`` (name, memories), with an exact-scan threshold of
    100, and auto_explain reporting the plans it runs."""
    settings = test_server.settings(new_database())
    test_server.migrate(settings)
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL(
                "CREATE OR REPLACE FUNCTION {}.exact_scan_rows() RETURNS integer LANGUAGE sql IMMUTABLE RETURN 100"
            ).format(sql.Identifier(settings.schema_name))
        )
    one = Settings(**{**settings.model_dump(), "pool_min_size": 1, "pool_max_size": 1})
    embedder = HashingEmbedder()
    with Database(one) as db:
        for number, (user, count) in enumerate(users):
            manager = MemoryManager(user_id=user, database=db, embedder=embedder, clock=clock)
            manager.add_memories(sentences(count, 20 + number), "episodic", importance=0.5)
        with db.connection() as conn:
            conn.execute("ANALYZE memories")
            conn.execute("LOAD 'auto_explain'")  # the plans of the connection's statements, as notices
            for name, value in (("log_min_duration", "0"), ("log_analyze", "on"), ("log_format", "json")):
                conn.execute(
                    sql.SQL("SET auto_explain.{} = {}").format(sql.Identifier(name), sql.Literal(value))
                )
            conn.execute("SET auto_explain.log_level = notice")
            conn.commit()
        yield db


@pytest.fixture()
def one_connection(
    test_server: TestServer, new_database: Callable[[], str], clock: Clock
) -> Iterator[Database]:
    """ "large" (400 memories, above the threshold) and twelve users of 30: the average user,
    which a generic plan assumes, is small."""
    users = [("large", 400), *((f"small{n}", 30) for n in range(SMALL_USERS))]
    yield from one_connection_over(test_server, new_database, clock, users)


@pytest.fixture()
def large_alone(test_server: TestServer, new_database: Callable[[], str], clock: Clock) -> Iterator[Database]:
    """ "large" alone: the average user, which a generic plan assumes, holds every row."""
    yield from one_connection_over(test_server, new_database, clock, [("large", 400)])


def vector_plan(db: Database, search: Callable[[], object]) -> dict[str, Any]:
    """The plan, as run, of the vector statement that ``search`` sends."""
    plans: list[str] = []

    def keep(notice: psycopg.errors.Diagnostic) -> None:
        plans.append(notice.message_primary or "")

    with db.connection() as conn:
        conn.add_notice_handler(keep)
    search()
    with db.connection() as conn:
        conn.remove_notice_handler(keep)
    ours = [json.loads(p[p.index("{") :]) for p in plans if "nearest AS MATERIALIZED" in p]
    assert len(ours) == 1, "one vector statement per search"
    plan: dict[str, Any] = ours[0]["Plan"]
    return plan


def ran(plan: dict[str, Any], index_prefix: str) -> bool:
    """Whether a scan of an index named ``index_prefix``… ran in ``plan``."""
    scans = [n for n in nodes(plan) if str(n.get("Index Name", "")).startswith(index_prefix)]
    assert scans, f"the plan has a scan of {index_prefix}…"
    return any(int(n.get("Actual Loops", 0)) > 0 for n in scans)


@pytest.mark.parametrize("first", ["small0", "large"])
def test_one_plan_reads_a_large_user_by_index_and_a_small_one_exactly(
    one_connection: Database, clock: Clock, first: str
) -> None:
    embedder = HashingEmbedder()
    managers = {
        user: MemoryManager(user_id=user, database=one_connection, embedder=embedder, clock=clock)
        for user in ("large", "small0")
    }
    second = "large" if first == "small0" else "small0"
    question = "garden party with cake"
    for _ in range(6):  # prepared on the connection, its generic plan made for ``first``
        managers[first].retrieve_memories(question, limit=10, scoring="vector")
    for user in (first, second):
        found: list[Any] = []

        def search(manager: MemoryManager = managers[user], into: list[Any] = found) -> None:
            into.extend(manager.retrieve_memories(question, limit=10, scoring="vector"))

        plan = vector_plan(one_connection, search)
        assert ran(plan, "memories_embedding_") == (user == "large"), f"{user} after {first}"
        assert [(i.id, round(i.score or 0.0, 9)) for i in found] == by_function(
            one_connection, managers[user], question, 10, exact=user != "large"
        )
    with one_connection.connection() as conn:
        row = conn.execute(
            "SELECT generic_plans FROM pg_prepared_statements WHERE statement LIKE '%%nearest AS MATERIALIZED%%'"
        ).fetchone()
    assert row is not None and row[0] >= 2, "the searches reused one generic plan"


def test_a_large_user_alone_is_read_by_key_after_the_index(large_alone: Database, clock: Clock) -> None:
    """Where the planner guesses that a user holds every row, the pool found through the HNSW index
    is still read back by key, not by reading all of the user's rows to join them (a generic plan
    did that: 73 ms at 100,000 memories where the index scan took 1)."""
    manager = MemoryManager(user_id="large", database=large_alone, embedder=HashingEmbedder(), clock=clock)
    for _ in range(6):
        manager.retrieve_memories("garden party with cake", limit=10, scoring="vector")
    plan = vector_plan(
        large_alone, lambda: manager.retrieve_memories("beach trip", limit=10, scoring="vector")
    )
    assert ran(plan, "memories_embedding_")
    read = [
        int(n.get("Actual Rows", 0)) * int(n.get("Actual Loops", 0))
        for n in nodes(plan)
        if n.get("Relation Name") == "memories"
        and not str(n.get("Index Name", "")).startswith("memories_embedding_")
    ]
    assert sum(read) <= 10, f"rows of memories read besides the index scan: {read}"


@pytest.mark.parametrize("fusion", ["weighted", "spread"])
def test_the_hybrid_ranks_with_the_pool_its_statement_finds(
    one_connection: Database, clock: Clock, fusion: str
) -> None:
    """The hybrid's vector pool, found by its planned statement and handed to search_memories, ranks
    as the function finding the pool itself: through the HNSW index for a large user, exactly for a
    small one."""
    embedder = HashingEmbedder()
    question = "garden party with cake"
    for user, by_index in (("large", True), ("small0", False)):
        config = MemoryConfig(fusion=fusion)  # type: ignore[arg-type]
        manager = MemoryManager(
            user_id=user, database=one_connection, embedder=embedder, clock=clock, config=config
        )
        for _ in range(6):  # prepared on the connection: its generic plan
            manager.retrieve_memories(question, limit=10, track_access=False)
        shown = manager.search_sql(MemorySearch(question, limit=10))
        assert "p_nearest =>" in shown.text and shown.before, "the hybrid hands its pool"
        found: list[Any] = []

        def search(m: MemoryManager = manager, into: list[Any] = found) -> None:
            into.extend(m.retrieve_memories(question, limit=10, track_access=False))

        plan = vector_plan(one_connection, search)
        assert ran(plan, "memories_embedding_") == by_index, user
        assert len(found) == 10
        assert ranked(found) == hybrid_by_function(manager, MemorySearch(question, limit=10)), user
