"""The vector ranking through the API: one planned statement (queries.vector_ranked) that must
give what search_memories(…, p_mode => 'vector') gives, log what it returns, and fall back to the
function when the HNSW scan comes back short; the hybrid's pool, which a short scan does not hand
to the function (queries.pooled_hybrid); both without an INSERT in a read-only store; and the round
trips of searches and of working memory, counted in a libpq trace."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql

from hello_pgmem import Database, HashingEmbedder, Settings
from hello_pgmem.core.filters import MemoryFilter
from hello_pgmem.dev.trace import count_round_trips
from hello_pgmem.memory import MemoryManager, MemorySearch, time_range
from hello_pgmem.memory import _ranked_queries as rq
from tests.conftest import Clock
from tests.deployments import TestServer

WORDS = [
    "garden",
    "coffee",
    "guitar",
    "trip",
    "beach",
    "train",
    "recipe",
    "cake",
    "party",
    "email",
    "project",
    "deadline",
    "office",
]


def sentences(count: int, seed: int) -> list[str]:
    pick = random.Random(seed)
    return [
        f"{pick.choice(WORDS)} and {pick.choice(WORDS)} with {pick.choice(WORDS)} number {i}"
        for i in range(count)
    ]


def by_function(
    db: Database, manager: MemoryManager, question: str, limit: int, exact: bool
) -> list[tuple[Any, ...]]:
    """(id, score) of search_memories in vector mode, with the time the question names;
    ``exact`` keeps the planner off HNSW."""
    named = time_range(question, manager.clock())
    params = {
        "time_from": named[0] if named else None,
        "time_to": named[1] if named else None,
        "user_id": manager.user_id,
        "model": manager.embedder.model_name,
        "query": manager.embedder.encode_query(question),
        "query_text": question,
        "limit": limit,
        "filter": MemoryFilter(memory_types=["episodic", "semantic"]),
        "now": manager.clock(),
    }
    with db.transaction(manager.user_id) as conn:
        if exact:
            conn.execute("SET LOCAL enable_indexscan = off")
        rows = conn.execute(
            "SELECT id, score FROM search_memories(%(user_id)s, %(model)s, %(query)s, %(query_text)s,"
            " %(limit)s, %(filter)s, p_now => %(now)s, p_mode => 'vector', p_per_type => %(limit)s,"
            " p_time_from => %(time_from)s, p_time_to => %(time_to)s)",
            params,
        ).fetchall()
    return [(row[0], round(row[1], 9)) for row in rows]


FUNCTION_DEFAULTS: dict[str, Any] = {
    "space": "text",
    "names": None,
    "seeds": None,
    "max_hops": 2,
    "mode": "vector",
    "fusion": "weighted",
    "vector_weight": 0.2,
    "per_type": None,
}
"""search_memories' other parameters as the API passes them for an unfiltered vector search."""


def hybrid_by_function(manager: MemoryManager, search: MemorySearch) -> list[tuple[Any, float]]:
    """(id, score) of search_memories finding its vector pool itself, with the API's parameters."""
    shown = manager.search_sql(search)
    rows = manager.db.rows_in_one_trip(manager.user_id, rq.SEARCH, shown.params)
    return [(row[0], round(row[-1], 9)) for row in rows]


def ranked(found: list[Any]) -> list[tuple[Any, float]]:
    """(id, score) of the memories a search returned."""
    return [(item.id, round(item.score or 0.0, 9)) for item in found]


def statement_params(
    user: str, embedder: HashingEmbedder, question: str, now: Any, limit: int, **overrides: Any
) -> dict[str, Any]:
    """The parameters of vector_ranked (and of ``SEARCH``, which it falls back to) for one unfiltered
    vector search of ``user`` with a pool of ``limit``, nothing logged."""
    types = overrides.pop("types", ["episodic", "semantic"])
    return {
        **FUNCTION_DEFAULTS,
        "types": types,
        "filter": MemoryFilter(memory_types=types),
        "user_id": user,
        "model": embedder.model_name,
        "query": embedder.encode_query(question),
        "query_text": question,
        "now": now,
        "limit": limit,
        "pool": limit,
        "time_from": None,
        "time_to": None,
        **overrides,
    }


SCAN_ONLY = """
SELECT count(*) FROM (
    SELECT id FROM memories
    WHERE user_id = %(user_id)s AND embedding_model = {model} AND forgotten_at IS NULL
      AND memory_type = ANY (%(types)s)
    ORDER BY embedding::vector(384) <=> %(query)s::vector(384) LIMIT %(pool)s) AS n
"""
"""The index scan that vector_ranked starts with, alone: how many memories it finds."""


def nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A plan node (EXPLAIN's JSON) and every node below it."""
    yield node
    for child in node.get("Plans", []):
        yield from nodes(child)


def function_ran(conn: psycopg.Connection[Any], statement: str, params: dict[str, Any]) -> bool:
    """Whether executing ``statement`` called search_memories (EXPLAIN ANALYZE runs it)."""
    row = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, params).fetchone()
    assert row is not None
    calls = [n for n in nodes(row[0][0]["Plan"]) if n.get("Function Name") == "search_memories"]
    assert len(calls) == 1, "the statement holds one call of the function"
    return int(calls[0]["Actual Loops"]) > 0


def accesses(db: Database, user_id: str) -> int:
    with db.transaction(user_id) as conn:
        row = conn.execute("SELECT count(*) FROM memory_accesses WHERE user_id = %s", (user_id,)).fetchone()
    return int(row[0]) if row else 0


def test_the_vector_ranking_is_the_function_s(
    make_manager: Callable[..., MemoryManager], clean: Database, clock: Clock
) -> None:
    manager = make_manager()
    manager.add_memories(sentences(240, 1), "episodic", importance=0.4)
    manager.add_memories(sentences(30, 2), "semantic", importance=0.8)
    last_week = [clock() - timedelta(days=7, hours=h) for h in range(40)]
    manager.add_memories(sentences(40, 8), "episodic", importance=0.4, timestamps=last_week)
    make_manager("bob").add_memories(
        sentences(200, 3), "episodic", importance=0.5
    )  # another user's rows in the index
    named = [f"what was {q} last week" for q in sentences(4, 9)]  # a time lifts those in range
    for question in [*sentences(12, 4), *named]:
        found = manager.retrieve_memories(question, limit=10, scoring="vector")
        assert [(i.id, round(i.score or 0.0, 9)) for i in found] == by_function(
            clean, manager, question, 10, exact=False
        )
        assert {i.memory_type for i in found} <= {"episodic", "semantic"}
        if question in named:
            assert any(i.components["time_score"] == 1.0 for i in found)
    before = accesses(clean, "alice")
    manager.retrieve_memories("garden and coffee", limit=7, scoring="vector")
    assert accesses(clean, "alice") == before + 7, "each returned memory logged once"


def test_the_statement_returns_the_function_s_rows_and_columns(
    make_manager: Callable[..., MemoryManager], clean: Database, embedder: HashingEmbedder, clock: Clock
) -> None:
    manager = make_manager()
    manager.add_memories(sentences(60, 5), "episodic", importance=0.3)
    params = statement_params("alice", embedder, "beach trip", clock(), 10, types=["episodic"], per_type=10)
    statement = rq.vector_ranked(embedder.model_name, embedder.dimension, False)
    with clean.transaction("alice") as conn:
        conn.execute(rq.VECTOR_SCAN, params)
        fast = conn.execute(statement, params)
        names = [column.name for column in fast.description or []]
        fast_rows = fast.fetchall()
        function = conn.execute(rq.SEARCH, params)
        assert names == [column.name for column in function.description or []] == list(rq.SEARCH_COLUMNS)
        assert fast_rows == function.fetchall()
        assert not function_ran(conn, statement, params), "a full scan answers without the function"


def test_ef_search_grows_with_the_model_s_index(
    make_manager: Callable[..., MemoryManager], clean: Database, embedder: HashingEmbedder
) -> None:
    make_manager().add_memories(sentences(20, 12), "episodic", importance=0.5)
    ef = "SELECT hnsw_ef_search(%s, %s, %s)"
    index = "SELECT 'memories_embedding_' || index_suffix FROM embedding_models WHERE model = %s"
    model = embedder.model_name
    with clean.connection() as conn:  # rolled back: the catalog is changed only inside it
        assert [conn.execute(ef, (model, pool, "embedding")).fetchone() for pool in (5, 10, 40, 600)] == [
            (40,),
            (40,),
            (80,),
            (1000,),
        ], "below 200,000 rows: twice the pool, at least 40, at most 1000"
        name = conn.execute(index, (model,)).fetchone()
        assert name is not None
        for rows, expected in ((1_000_000, 200), (300_000, 60), (20_000_000, 1000)):
            conn.execute("UPDATE pg_class SET reltuples = %s WHERE oid = to_regclass(%s)", (rows, name[0]))
            assert conn.execute(ef, (model, 10, "embedding")).fetchone() == (expected,)
        assert conn.execute(ef, (model, 10, "text_embedding")).fetchone() == (40,), "another index"
        assert conn.execute(ef, ("no such model", 10, "embedding")).fetchone() == (40,)
        conn.execute(rq.VECTOR_SCAN, {"user_id": "alice", "model": model, "pool": 10, "limit": 10})
        assert conn.execute("SELECT current_setting('hnsw.ef_search')").fetchone() == ("1000",)
        conn.rollback()


@pytest.mark.parametrize("scoring", ["vector", "hybrid"])
def test_a_search_is_one_round_trip(
    settings: Settings, clean: Database, embedder: HashingEmbedder, clock: Clock, scoring: str
) -> None:
    one = Settings(**{**settings.model_dump(), "pool_min_size": 1, "pool_max_size": 1})
    with Database(one) as db:
        manager = MemoryManager.of_types("alice", ["episodic"], database=db, embedder=embedder, clock=clock)
        manager.add_memories(sentences(30, 11), "episodic", importance=0.5)
        found: list[list[Any]] = []
        for question in ("garden party with cake", "what was the beach trip last week"):

            def search(asked: str = question) -> None:
                found.append(manager.retrieve_memories(asked, limit=5, scoring=scoring))

            trips = count_round_trips(db, search)
            assert trips["round_trips"] == 1, f"{scoring} search of {question!r}: {trips}"
            assert len(found[-1]) == 5
    assert accesses(clean, "alice") == 10, "both searches logged what they returned"


def test_working_memory_adds_in_one_round_trip_and_searches_in_two(
    settings: Settings, clean: Database, embedder: HashingEmbedder, clock: Clock
) -> None:
    one = Settings(**{**settings.model_dump(), "pool_min_size": 1, "pool_max_size": 1})
    with Database(one) as db:
        manager = MemoryManager.of_types("alice", ["working"], database=db, embedder=embedder, clock=clock)
        manager.add_memory("warm-up: the model and the tokenizer", "working", 0.5)
        assert count_round_trips(db, lambda: manager.add_memory("a garden party", "working", 0.5)) == {
            "round_trips": 1,
            "statements": 6,
        }
        found: list[Any] = []
        trips = count_round_trips(db, lambda: found.extend(manager.retrieve_memories("garden party")))
        assert [item.content for item in found][:1] == ["a garden party"]
        assert trips["round_trips"] == 2, "the live items, then their scores with the COMMIT"


def short_scan_database(
    test_server: TestServer, new_database: Callable[[], str], clock: Clock, *, through_index: bool
) -> Iterator[Database]:
    """Two users, "other" with 600 memories and "me" with 30, in a database whose planner then walks
    the HNSW index (sorting is made dear) and whose HNSW scans stop after their first batch
    (hnsw.max_scan_tuples = 1): among the first neighbours few are "me"'s. ``through_index``: every
    user's vectors through the index, however few memories."""
    settings = test_server.settings(new_database())
    test_server.migrate(settings)
    embedder = HashingEmbedder()
    with Database(settings) as db:
        for user, count, seed in (("other", 600, 6), ("me", 30, 7)):
            manager = MemoryManager(user_id=user, database=db, embedder=embedder, clock=clock)
            manager.add_memories(sentences(count, seed), "episodic", importance=0.5)
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        name = sql.Identifier(conn.info.dbname)
        conn.execute(sql.SQL("ALTER DATABASE {} SET hnsw.max_scan_tuples = 1").format(name))
        conn.execute(sql.SQL("ALTER DATABASE {} SET enable_sort = off").format(name))
        if through_index:
            conn.execute(
                "CREATE OR REPLACE FUNCTION pgmem.exact_scan_rows() RETURNS integer LANGUAGE sql IMMUTABLE RETURN 0"
            )
    with Database(settings) as db:  # connections made after the settings
        yield db


@pytest.fixture()
def short_scans(test_server: TestServer, new_database: Callable[[], str], clock: Clock) -> Iterator[Database]:
    yield from short_scan_database(test_server, new_database, clock, through_index=True)


@pytest.fixture()
def few_memories(
    test_server: TestServer, new_database: Callable[[], str], clock: Clock
) -> Iterator[Database]:
    yield from short_scan_database(test_server, new_database, clock, through_index=False)


def test_a_user_with_few_memories_is_read_exactly(few_memories: Database, clock: Clock) -> None:
    """Where an HNSW scan would come back short and the function would have to answer, a user with
    at most exact_scan_rows() memories is read exactly by the statement itself."""
    embedder = HashingEmbedder()
    me = MemoryManager(user_id="me", database=few_memories, embedder=embedder, clock=clock)
    question = "garden party with cake"
    params = statement_params("me", embedder, question, clock(), 20)
    with few_memories.transaction("me") as conn:
        conn.execute(rq.VECTOR_SCAN, {"user_id": "me", "model": embedder.model_name, "pool": 20, "limit": 20})
        statement = rq.vector_ranked(embedder.model_name, embedder.dimension, False)
        assert not function_ran(conn, statement, params), "no short scan: no fallback"
    found = me.retrieve_memories(question, limit=20, scoring="vector")
    assert [(i.id, round(i.score or 0.0, 9)) for i in found] == by_function(
        few_memories, me, question, 20, exact=True
    )


def test_a_short_hnsw_scan_still_fills_the_limit(short_scans: Database, clock: Clock) -> None:
    embedder = HashingEmbedder()
    me = MemoryManager(user_id="me", database=short_scans, embedder=embedder, clock=clock)
    question = "garden party with cake"
    params = statement_params("me", embedder, question, clock(), 20)
    with short_scans.transaction("me") as conn:
        conn.execute(rq.VECTOR_SCAN, {"user_id": "me", "model": embedder.model_name, "pool": 20, "limit": 20})
        scan_only = sql.SQL(SCAN_ONLY).format(model=sql.Literal(embedder.model_name))
        scan = conn.execute(scan_only, params).fetchone()
        assert scan is not None and scan[0] < 20, "the setup must make the statement's index scan short"
        statement = rq.vector_ranked(embedder.model_name, embedder.dimension, False)
        assert function_ran(conn, statement, params), "a short scan is answered by the function"
    before = accesses(short_scans, "me")
    found = me.retrieve_memories(question, limit=20, scoring="vector")
    assert [(i.id, round(i.score or 0.0, 9)) for i in found] == by_function(
        short_scans, me, question, 20, exact=True
    )
    assert accesses(short_scans, "me") == before + 20, "logged once, after the fallback"


def test_a_short_scan_hands_no_pool(short_scans: Database, clock: Clock) -> None:
    """The hybrid's HNSW scan that stops before the pool is full hands nothing: the function finds
    the pool itself, with its exact fallback, and the limit is filled."""
    manager = MemoryManager(user_id="me", database=short_scans, embedder=HashingEmbedder(), clock=clock)
    search = MemorySearch("garden party with cake", limit=20)
    shown = manager.search_sql(search)
    with short_scans.transaction("me") as conn:
        for earlier, params in shown.before:
            conn.execute(earlier, params)
        pool = conn.execute(
            "WITH " + shown.text.split("WITH", 1)[1].split("), answer AS", 1)[0] + ") SELECT ids FROM pool",
            shown.params,
        ).fetchall()
    assert pool == [], "the short scan hands no pool"
    found = manager.retrieve_memories(search.query, limit=20, track_access=False)
    assert len(found) == 20
    assert ranked(found) == hybrid_by_function(manager, search)


@pytest.mark.parametrize("scoring", ["hybrid", "vector"])
def test_a_read_only_store_searches_with_the_planned_statements(
    make_manager: Callable[..., MemoryManager], clean: Database, clock: Clock, scoring: str
) -> None:
    """A store that may not write (PGMEM_READ_ONLY, the web view's) sends the planned statements
    without their INSERT of accesses: PostgreSQL refuses any INSERT in a read-only transaction, even
    one that inserts nothing."""
    question = "garden party with cake"
    writer = make_manager()
    writer.add_memories(sentences(30, 3), "episodic", importance=0.5)
    expected = ranked(writer.retrieve_memories(question, limit=5, scoring=scoring, track_access=False))
    read_only = clean.settings.model_copy(update={"read_only": True})
    with Database(read_only) as db:
        reader = MemoryManager(user_id="alice", database=db, embedder=HashingEmbedder(), clock=clock)
        found = reader.retrieve_memories(question, limit=5, scoring=scoring, track_access=False)
    assert ranked(found) == expected and len(expected) == 5
