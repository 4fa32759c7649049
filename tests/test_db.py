"""The connection pool: configured connections, transactions, clear errors."""

from __future__ import annotations

import os
import resource
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
import psycopg
import pytest

from hello_pgmem import ConfigurationError, Database, DatabaseUnavailableError, Settings
from hello_pgmem.db import check_idle_connection, discard_unless_rolled_back
from hello_pgmem.dev.trace import count_round_trips
from hello_pgmem.embedding import HashingEmbedder
from hello_pgmem.memory import MemoryManager
from tests.deployments import TestServer


def test_connections_are_configured(database: Database) -> None:
    with database.connection() as conn:
        path = conn.execute("SHOW search_path").fetchone()
        assert path is not None
        assert [name.strip(' "') for name in str(path[0]).split(",")] == [
            "pgmem",
            "public",
            "ag_catalog",
        ]
        timeout = conn.execute("SHOW statement_timeout").fetchone()
        assert timeout == ("30s",)
        vector = conn.execute("SELECT %s::vector", (np.array([1.5, 2.0], dtype=np.float32),)).fetchone()
        assert vector is not None
        assert np.allclose(vector[0].to_numpy(), [1.5, 2.0])


def test_transaction_rolls_back_on_error(clean: Database) -> None:
    memory_id = uuid.uuid4()
    with pytest.raises(RuntimeError), clean.transaction("alice") as conn:
        conn.execute(
            "INSERT INTO memories (user_id, id, memory_type, content) VALUES ('alice', %s, 'episodic', 'x')",
            (memory_id,),
        )
        raise RuntimeError("fail before commit")
    with clean.connection() as conn:
        assert conn.execute("SELECT count(*) FROM memories WHERE id = %s", (memory_id,)).fetchone() == (0,)


def test_transaction_sets_the_user_for_its_duration_only(database: Database) -> None:
    with database.transaction("alice") as conn:
        assert conn.execute("SELECT current_setting('pgmem.user_id')").fetchone() == ("alice",)
    with database.connection() as conn:
        assert conn.execute("SELECT current_setting('pgmem.user_id', true)").fetchone() in [
            (None,),
            ("",),
        ]


def test_a_statement_s_rows_in_one_round_trip(settings: Settings) -> None:
    one = Settings(**{**settings.model_dump(), "pool_min_size": 1, "pool_max_size": 1})
    statement = "SELECT current_setting('pgmem.user_id'), n FROM generate_series(1, %(n)s) n"
    with Database(one) as db:
        found: list[Any] = []
        trips = count_round_trips(db, lambda: found.extend(db.rows_in_one_trip("alice", statement, {"n": 3})))
        assert found == [("alice", 1), ("alice", 2), ("alice", 3)]
        assert trips == {"round_trips": 1, "statements": 4}, "BEGIN, the scope, the statement, COMMIT"
        with pytest.raises(psycopg.errors.DivisionByZero):
            db.rows_in_one_trip("alice", "SELECT 1 / 0", {})
        assert db.rows_in_one_trip("alice", "SELECT 1", {}) == [(1,)], "the connection is usable after"


def test_a_failed_pipeline_leaves_no_prepared_statement_behind(server_url: str) -> None:
    """psycopg records a statement as prepared when it sends its Parse; after a failure earlier in
    the pipeline the server skips that Parse. The cleanup must leave a connection whose later
    statements do not name it."""
    with psycopg.connect(server_url, autocommit=True, prepare_threshold=1) as conn:
        conn.execute("CREATE TEMP TABLE keys (k int PRIMARY KEY)")
        conn.execute("ROLLBACK")  # a ROLLBACK already seen: psycopg checks a statement's result once

        def insert(key: int) -> None:
            with conn.pipeline():
                conn.execute("BEGIN")
                conn.execute("INSERT INTO keys VALUES (%s)", (key,))
                conn.execute("COMMIT")  # prepared on its second run, the failed one

        insert(1)
        with pytest.raises(psycopg.errors.UniqueViolation):
            try:
                insert(1)
            finally:
                discard_unless_rolled_back(conn)
        insert(2)
        assert conn.execute("SELECT array_agg(k ORDER BY k) FROM keys").fetchone() == ([1, 2],)


def test_failed_pipelined_writes_leave_the_pooled_connection_clean(
    settings: Settings, clean: Database
) -> None:
    """Two writes that fail inside a pipelined transaction, on a pool of one connection, at the
    runs where psycopg starts preparing the statements; then twenty writes of other users."""
    first = MemoryManager(user_id="pipeline_owner", database=clean, embedder=HashingEmbedder())
    first.add_memory("the first memory", "episodic")
    duplicate = first.list_memories("episodic")[0]
    one = Settings(**{**settings.model_dump(), "pool_min_size": 1, "pool_max_size": 1})
    with Database(one) as db:
        owner = MemoryManager(user_id="pipeline_owner", database=db, embedder=HashingEmbedder())
        for run in range(8):
            if run in (0, 6):
                with pytest.raises(psycopg.errors.UniqueViolation):
                    owner._parts.episodic.add_many([duplicate])
            else:
                owner.add_memory(f"memory number {run}", "episodic")
        for n in range(20):
            other = MemoryManager(user_id=f"pipeline_user_{n}", database=db, embedder=HashingEmbedder())
            other.add_memory(f"a memory of user {n}", "episodic")
            assert [m.content for m in other.list_memories("episodic")] == [f"a memory of user {n}"]


def test_unreachable_server_is_a_clear_error() -> None:
    settings = Settings(database_url="postgresql://postgres@127.0.0.1:1/pgmem", connect_timeout_s=1)
    with pytest.raises(DatabaseUnavailableError, match="cannot connect to the database"):
        Database(settings).open()


def test_database_constraints_reject_bad_rows(conn: object) -> None:
    import psycopg

    assert isinstance(conn, psycopg.Connection)
    bad_rows = [
        ("", "episodic", "x", 0.5, "{}"),
        ("u", "procedural", "x", 0.5, "{}"),
        ("u", "episodic", "   ", 0.5, "{}"),
        ("u", "episodic", "x", 1.5, "{}"),
        ("u", "episodic", "x", float("nan"), "{}"),
        ("u", "episodic", "x", 0.5, "[1, 2]"),
    ]
    for user, kind, content, importance, metadata in bad_rows:
        with pytest.raises(psycopg.errors.CheckViolation), conn.transaction():
            conn.execute(
                "INSERT INTO memories (user_id, id, memory_type, content, importance, metadata)"
                " VALUES (%s, gen_random_uuid(), %s, %s, %s, %s::jsonb)",
                (user, kind, content, importance, metadata),
            )


def test_a_connection_the_server_ended_is_replaced_on_checkout(settings: Settings) -> None:
    one = Settings(**{**settings.model_dump(), "pool_min_size": 1, "pool_max_size": 1})
    with Database(one) as db, psycopg.connect(settings.database_url, autocommit=True) as admin:
        with db.connection() as conn:
            first = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert first is not None
        ended = admin.execute("SELECT pg_terminate_backend(%s, 5000)", (first[0],)).fetchone()
        assert ended == (True,)
        with db.connection() as conn:  # no error: the check saw the closed socket
            second = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert second is not None and second[0] != first[0]


def test_the_checkout_check_takes_descriptors_above_1024(settings: Settings) -> None:
    """A process with many files open gets sockets past select()'s FD_SETSIZE."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4096)), hard))
    fillers = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        with psycopg.connect(settings.database_url) as conn:
            assert conn.fileno() >= 1024
            check_idle_connection(conn)  # an idle, live connection: no error
    finally:
        for fd in fillers:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_database_takes_at_most_32_embedding_models(
    test_server: TestServer, new_database: Callable[[], str]
) -> None:
    """Each model costs three HNSW indexes that every write updates: the 33rd is refused, before
    any index is made, and the models already registered keep working."""
    fresh = test_server.settings(new_database())
    test_server.migrate(fresh)
    with Database(fresh) as db:
        with db.connection() as conn:
            known = conn.execute("SELECT count(*) FROM embedding_models").fetchone()
        assert known is not None
        for n in range(32 - known[0]):
            db.ensure_embedding_model(f"cap-test-{n}", 4)
        with db.connection() as conn:
            indexes = conn.execute(
                "SELECT count(*) FROM pg_indexes WHERE indexdef LIKE '%%vector(4)%%'"
            ).fetchone()
        with pytest.raises(ConfigurationError, match="at most 32 embedding models"):
            db.ensure_embedding_model("one-too-many", 4)
        with db.connection() as conn:
            after = conn.execute(
                "SELECT count(*) FROM pg_indexes WHERE indexdef LIKE '%%vector(4)%%'"
            ).fetchone()
        assert after == indexes
        db.ensure_embedding_model("cap-test-0", 4)  # a known model is no new one


def test_a_new_model_gets_the_configured_hnsw_parameters(settings: Settings) -> None:
    model = f"hnsw-test-{uuid.uuid4().hex[:8]}"
    tuned = Settings(**{**settings.model_dump(), "hnsw_m": 8, "hnsw_ef_construction": 32})
    with Database(tuned) as db:
        db.ensure_embedding_model(model, 12)
        with db.connection() as conn:
            definitions = [
                row[0]
                for row in conn.execute(
                    "SELECT indexdef FROM pg_indexes WHERE indexdef LIKE %s", (f"%{model}%",)
                ).fetchall()
            ]
            assert len(definitions) == 3  # memories (text and description vectors) and chunks
            assert all("m='8'" in d and "ef_construction='32'" in d for d in definitions), definitions
            conn.execute("DELETE FROM embedding_models WHERE model = %s", (model,))
            for row in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE indexdef LIKE %s", (f"%{model}%",)
            ).fetchall():
                conn.execute(f'DROP INDEX "{row[0]}"')
    with pytest.raises(ValueError, match=r"PGMEM_HNSW_M|hnsw_m"):
        Settings(hnsw_m=1)


def test_values_statements_number_each_rows_placeholders_and_split_at_the_parameter_limit(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    """The multi-row form of a single-row INSERT (what Citus gets instead of INSERT ... SELECT)."""
    from hello_pgmem.db import values_statements
    from hello_pgmem.memory import _queries as q

    rows = [{"memory_id": uuid.uuid4()} for _ in range(30_001)]
    statements = list(values_statements(q.LOG_ONE_ACCESS, rows, {"user_id": "alice", "now": "2026-01-01"}))
    assert len(statements) == 2, "30,000 parameters at most per statement"
    first, params = statements[0]
    assert (
        "%(memory_id_0)s" in first and "%(memory_id_29999)s" in first and first.count("%(user_id)s") == 30_000
    )
    assert params["user_id"] == "alice" and params["memory_id_1"] == rows[1]["memory_id"]
    for statement, values in statements:
        conn.execute(statement, values)
    found = conn.execute(
        "SELECT count(DISTINCT memory_id) FROM memory_accesses WHERE user_id = 'alice'"
    ).fetchone()
    assert found == (30_001,)
    with pytest.raises(ValueError, match="single-row INSERT"):
        next(values_statements(q.LOG_ACCESS, rows, {}))


def test_threads_opening_one_database_share_one_pool(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from psycopg_pool import ConnectionPool

    from hello_pgmem.db import database as db_module

    made: list[object] = []

    class CountedPool(ConnectionPool):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            made.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(db_module, "ConnectionPool", CountedPool)
    database = Database(settings)
    start = threading.Barrier(10)

    def use() -> None:
        start.wait()
        with database.transaction("alice") as conn:
            conn.execute("SELECT 1")

    threads = [threading.Thread(target=use) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    database.close()
    assert len(made) == 1
