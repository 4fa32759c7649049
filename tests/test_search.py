"""Ranked search functions: filters inside the vector scan, full limits, the partial HNSW index."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg
import pytest

from hello_pgmem import Database
from tests.deployments import ON_CITUS

Conn = psycopg.Connection[tuple[Any, ...]]
MODEL = "test-random-16"
DIM = 16
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture(scope="module")
def _corpus(database: Database) -> Iterator[None]:
    """Ten users; user u0 has 2,000 memories in session s-big and 15 in session s-small: more than
    exact_scan_rows(), so its searches walk the HNSW index."""
    with database.connection() as conn:
        _load(conn)
    yield
    with database.connection() as conn:
        conn.execute("DELETE FROM memories WHERE embedding_model = %s", (MODEL,))


@pytest.fixture()
def populated(_corpus: None, conn: Conn) -> Conn:
    """The corpus, on a connection whose changes are rolled back (and whose SET LOCAL reaches
    the workers of a cluster)."""
    if ON_CITUS:
        conn.execute("SET LOCAL citus.propagate_set_commands = 'local'")
    return conn


def _load(conn: Conn) -> None:
    conn.execute("SELECT register_embedding_model(%s, %s)", (MODEL, DIM))
    rng = np.random.default_rng(7)
    rows = []
    for user in range(10):
        for i in range(300 if user else 2015):
            session = "s-small" if user == 0 and i < 15 else "s-big"
            rows.append(
                (
                    f"u{user}",
                    uuid.uuid4(),
                    "episodic",
                    f"memory {user}-{i}",
                    0.5,
                    session,
                    NOW - timedelta(days=i % 30),
                    unit(rng),
                    MODEL,
                )
            )
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO memories (user_id, id, memory_type, content, importance, session_id,"
            " created_at, embedding, embedding_model) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            rows,
        )
    conn.execute("ANALYZE memories")


def plans(conn: Conn, query: str, args: tuple[object, ...]) -> tuple[list[tuple[object, ...]], str]:
    """Run ``query`` and return its rows with the plans of every statement inside it."""
    notes: list[str] = []
    conn.add_notice_handler(lambda d: notes.append(d.message_primary or ""))
    conn.execute("LOAD 'auto_explain'")
    conn.execute("SET LOCAL auto_explain.log_min_duration = 0")
    conn.execute("SET LOCAL auto_explain.log_nested_statements = on")
    conn.execute("SET LOCAL auto_explain.log_level = notice")
    rows = conn.execute(query, args).fetchall()
    conn.execute("SET LOCAL auto_explain.log_min_duration = -1")
    return rows, "\n".join(notes)


@pytest.mark.one_server
def test_search_uses_the_partial_hnsw_index(populated: Conn) -> None:
    query = unit(np.random.default_rng(1))
    # With sorting forbidden the planner must order by the index: the partial HNSW index has to
    # match the function's expression and predicate for this plan to exist at all.
    populated.execute("SET LOCAL enable_sort = off")
    rows, plan = plans(
        populated, "SELECT * FROM search_by_recency('u0', %s, %s, p_limit => 10)", (MODEL, query)
    )
    assert len(rows) == 10
    assert "Index Scan using memories_embedding_" in plan


@pytest.mark.one_server
def test_selective_filter_still_returns_the_full_limit(populated: Conn) -> None:
    query = unit(np.random.default_rng(2))
    # Forbid the sort so the planner must walk the HNSW index, where the session filter keeps
    # 15 of 4,715 rows: only iterative scans can still find 10.
    populated.execute("SET LOCAL enable_sort = off")
    rows, plan = plans(
        populated,
        "SELECT id, session_id FROM search_by_recency('u0', %s, %s, p_limit => 10, p_session_id => 's-small')",
        (MODEL, query),
    )
    assert "Index Scan using memories_embedding_" in plan
    assert len(rows) == 10
    assert {row[1] for row in rows} == {"s-small"}


@pytest.mark.one_server
def test_a_small_users_exact_read_never_scans_the_table(populated: Conn) -> None:
    query = unit(np.random.default_rng(6))
    # One plan for every user, as search_memories makes it, on a table whose statistics say one
    # user fills it (as they do until the next ANALYZE after a first user's import): a plan made
    # for "any user" of it reads the table whole.
    populated.execute("DELETE FROM memories WHERE user_id <> 'u3'")
    populated.execute(
        "INSERT INTO memories (user_id, id, memory_type, content, importance)"
        " SELECT 'crowd', gen_random_uuid(), 'episodic', 'x', 0.5 FROM generate_series(1, 30000)"
    )
    populated.execute("ALTER TABLE memories ALTER COLUMN user_id SET (n_distinct = 1)")
    populated.execute("ANALYZE memories")  # all rolled back with the test
    populated.execute("SET LOCAL plan_cache_mode = force_generic_plan")
    args = (MODEL, query)
    rows, plan = plans(populated, "SELECT id FROM memory_candidates('u3', %s, %s, 10)", args)
    exact = populated.execute(
        "SELECT id FROM memories WHERE user_id = 'u3' AND embedding_model = %s"
        " ORDER BY (embedding::vector(16) <=> %s::vector(16)) + 0 LIMIT 10",
        args,
    ).fetchall()
    assert rows == exact
    assert "Seq Scan on memories" not in plan


def test_a_short_hnsw_scan_falls_back_to_an_exact_one(populated: Conn) -> None:
    query = unit(np.random.default_rng(5))
    # Make the iterative scan give up after its first batch: among the first ef_search
    # neighbours few are in session s-small (15 of 4,715 rows), so the index comes back short.
    populated.execute("SET LOCAL enable_sort = off")
    populated.execute("SET LOCAL hnsw.max_scan_tuples = 1")
    hnsw_only = populated.execute(
        "SELECT count(*) FROM (SELECT id FROM memories WHERE user_id = 'u0' AND session_id = 's-small'"
        " AND embedding_model = %s AND forgotten_at IS NULL"
        " ORDER BY embedding::vector(16) <=> %s::vector(16) LIMIT 10) t",
        (MODEL, query),
    ).fetchone()
    assert hnsw_only is not None and hnsw_only[0] < 10, "the setup must make the index scan short"
    found = populated.execute(
        "SELECT id FROM memory_candidates('u0', %s, %s, 10, memory_filter(p_session_id => 's-small'))", (MODEL, query)
    ).fetchall()
    exact = populated.execute(
        "SELECT id FROM memories WHERE user_id = 'u0' AND session_id = 's-small'"
        " ORDER BY (embedding::vector(16) <=> %s::vector(16)) + 0 LIMIT 10",
        (query,),
    ).fetchall()
    assert found == exact


def test_results_match_exact_search_for_the_user(populated: Conn) -> None:
    query = unit(np.random.default_rng(3))
    found = populated.execute("SELECT id FROM memory_candidates('u3', %s, %s, 10)", (MODEL, query)).fetchall()
    exact = populated.execute(
        "SELECT id FROM memories WHERE user_id = 'u3' ORDER BY embedding::vector(16) <=> %s LIMIT 10",
        (query,),
    ).fetchall()
    assert len(found) == 10
    assert len(set(found) & set(exact)) >= 9


def test_scores_follow_the_episodic_formula(populated: Conn) -> None:
    query = unit(np.random.default_rng(4))
    rows = populated.execute(
        "SELECT vector_score, recency_score, importance_weight, score, created_at"
        " FROM search_by_recency('u1', %s, %s, p_limit => 5, p_now => %s)",
        (MODEL, query, NOW),
    ).fetchall()
    assert len(rows) == 5
    scores = [row[3] for row in rows]
    assert scores == sorted(scores, reverse=True)
    for vector, recency, weight, score, created in rows:
        age_days = (NOW - created).total_seconds() / 86400
        assert recency == pytest.approx(1 / (1 + age_days))
        assert weight == pytest.approx(1.0)
        assert score == pytest.approx((vector * 0.8 + recency * 0.2) * weight)


def test_time_and_importance_filters_apply(populated: Conn) -> None:
    populated.execute("UPDATE memories SET importance = 0.9 WHERE user_id = 'u2' AND content LIKE '%%-1_'")
    query = unit(np.random.default_rng(5))
    rows = populated.execute(
        "SELECT importance, created_at FROM search_by_recency('u2', %s, %s, p_limit => 50,"
        " p_min_importance => 0.8, p_since => %s)",
        (MODEL, query, NOW - timedelta(days=15)),
    ).fetchall()
    assert rows, "some memories pass both filters"
    assert all(imp >= 0.8 and created >= NOW - timedelta(days=15) for imp, created in rows)


def test_forgotten_memories_never_come_back(populated: Conn) -> None:
    populated.execute("UPDATE memories SET forgotten_at = now() WHERE user_id = 'u4'")
    query = unit(np.random.default_rng(6))
    assert (
        populated.execute(
            "SELECT * FROM search_by_recency('u4', %s, %s, p_limit => 5)", (MODEL, query)
        ).fetchall()
        == []
    )


def test_other_users_are_never_returned(populated: Conn) -> None:
    query = unit(np.random.default_rng(8))
    ids = populated.execute(
        "SELECT id FROM search_by_recency('u5', %s, %s, p_limit => 50)", (MODEL, query)
    ).fetchall()
    owners = populated.execute(
        "SELECT DISTINCT user_id FROM memories WHERE id = ANY(%s)", ([row[0] for row in ids],)
    ).fetchall()
    assert owners == [("u5",)]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            "search_by_recency('u0', 'no-such-model', %s, p_limit => 5)",
            "model 'no-such-model' is not registered",
        ),
        (
            "search_by_recency('u0', 'test-random-16', %s, p_limit => 0)",
            "limit must be a number between 1 and 1000, got 0",
        ),
        ("search_by_recency('', 'test-random-16', %s, p_limit => 5)", "user_id must be a non-empty string"),
        (
            "search_by_recency('u0', 'test-random-16', %s, 'semantic')",
            "memory_type must be episodic or perceptual",
        ),
    ],
)
def test_bad_search_arguments(populated: Conn, call: str, message: str) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=message):
        populated.execute(f"SELECT * FROM {call}", (unit(np.random.default_rng(9)),))


def test_query_of_the_wrong_dimension_is_rejected(populated: Conn) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="query must be a vector of 16 dimensions"):
        populated.execute(
            "SELECT * FROM search_by_recency('u0', %s, %s, p_limit => 5)",
            (MODEL, np.ones(8, dtype=np.float32)),
        )


def test_register_embedding_model_is_idempotent_and_checks_dimension(conn: Conn) -> None:
    conn.execute("SELECT register_embedding_model('m-idem', 4)")
    conn.execute("SELECT register_embedding_model('m-idem', 4)")
    indexes = conn.execute(
        "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema()  AND indexdef LIKE '%%m-idem%%'"
    ).fetchone()
    assert indexes == (3,)  # memories.embedding, memories.text_embedding, chunks.embedding
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="registered with 4 dimensions, got 5"):
        conn.execute("SELECT register_embedding_model('m-idem', 5)")


def test_a_vector_of_the_wrong_dimension_cannot_be_stored(conn: Conn) -> None:
    conn.execute("SELECT register_embedding_model('m-dim', 4)")
    with pytest.raises(psycopg.errors.DataException, match="expected 4 dimensions"):
        conn.execute(
            "INSERT INTO memories (user_id, id, memory_type, content, embedding, embedding_model)"
            " VALUES ('u', gen_random_uuid(), 'episodic', 'x', %s, 'm-dim')",
            (np.ones(3, dtype=np.float32),),
        )


def test_models_above_2000_dimensions_use_halfvec(conn: Conn) -> None:
    conn.execute("SELECT register_embedding_model('m-big', 3072)")
    defs = conn.execute(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema()  AND indexdef LIKE '%%m-big%%'"
    ).fetchall()
    assert len(defs) == 3 and all("halfvec(3072)" in d[0] for d in defs)
    v = np.random.default_rng(0).random(3072).astype(np.float32)
    conn.execute(
        "INSERT INTO memories (user_id, id, memory_type, content, embedding, embedding_model)"
        " VALUES ('big', gen_random_uuid(), 'episodic', 'x', %s, 'm-big')",
        (v,),
    )
    rows = conn.execute(
        "SELECT vector_score FROM search_by_recency('big', 'm-big', %s, p_limit => 1)", (v,)
    ).fetchall()
    assert rows[0][0] == pytest.approx(1.0, abs=1e-3)


def test_search_functions_are_never_jit_compiled(populated: Conn) -> None:
    """Compiling a search's statements costs more than running them (20 ms a call for the graph's
    walk at 30,000 facts, planned above the JIT threshold): every search function turns JIT off."""
    searches = (
        "memory_candidates",
        "graph_memories",
        "search_memories",
        "search_by_recency",
        "search_semantic",
        "search_chunks",
        "search_sessions",
        "search_memories_as_of",
    )
    rows = populated.execute(
        "SELECT proname, coalesce(proconfig, '{}') FROM pg_proc WHERE proname = ANY (%s)", (list(searches),)
    ).fetchall()
    assert {name for name, _ in rows} == set(searches)
    assert [name for name, config in rows if "jit=off" not in config] == []
