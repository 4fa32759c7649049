"""A hit of the hybrid search is one type, memory_hit: both search functions return it, Python reads
its fields by the same names, and a schema whose functions returned their own columns gets it. The
search's types are a revision's, never a live file's."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from hello_pgmem import Database, MemoryManager, Settings
from hello_pgmem.db import migrations
from hello_pgmem.db.resources import read_live_sql
from hello_pgmem.memory import MemorySearch
from hello_pgmem.memory._ranked_queries import SEARCH_COLUMNS

SQL = Path(__file__).resolve().parent.parent / "sql"
SEARCHES = ("search_memories", "search_memories_by_vector")
RETURNS = """
    SELECT p.proname, p.prorettype::regtype::text, p.proretset FROM pg_proc p
    WHERE p.pronamespace = %s::regnamespace AND p.proname = ANY (%s) ORDER BY 1
"""


def hit_fields(conn: psycopg.Connection[tuple[Any, ...]]) -> tuple[str, ...]:
    row = conn.execute(
        "SELECT array_agg(a.attname ORDER BY a.attnum) FROM pg_attribute a"
        " WHERE a.attrelid = 'memory_hit'::regclass AND a.attnum > 0"
    ).fetchone()
    assert row is not None
    return tuple(row[0])


def test_both_searches_return_the_hit_type(database: Database) -> None:
    with database.connection() as conn:
        returned = conn.execute(RETURNS, (database.settings.schema_name, list(SEARCHES))).fetchall()
        fields = hit_fields(conn)
    assert [(name, type_.rsplit(".", 1)[-1], many) for name, type_, many in returned] == [
        (name, "memory_hit", True) for name in SEARCHES
    ]
    assert fields == SEARCH_COLUMNS


def test_the_hit_columns_are_written_once_in_sql() -> None:
    """No function spells the hit's columns out: a new component is one field of one type."""
    spelled = {
        path.name: len(re.findall(r"RETURNS TABLE \([^)]*context_score", path.read_text(encoding="utf-8")))
        for path in SQL.glob("*.sql")
    }
    assert sum(spelled.values()) == 0, spelled


def test_a_search_that_returned_its_own_columns_is_made_to_return_hits(database: Database) -> None:
    """Applying search.sql over a schema where search_memories returned a table of its own drops it
    and makes it return memory_hit, in the same transaction (rolled back here)."""
    schema = database.settings.schema_name
    with database.connection() as conn:
        try:
            conn.execute("DROP FUNCTION search_memories_by_vector")
            conn.execute(
                "CREATE FUNCTION search_memories_by_vector(text, text, vector, integer, memory_filter, text,"
                " timestamptz, timestamptz, timestamptz, integer, integer)"
                " RETURNS TABLE (id uuid, score double precision) LANGUAGE sql AS 'SELECT NULL::uuid, 0.0::float8'"
            )
            conn.execute("SELECT set_config('check_function_bodies', 'off', true)")
            conn.execute(read_live_sql("search.sql").encode())
            returned = conn.execute(RETURNS, (schema, ["search_memories_by_vector"])).fetchall()
        finally:
            conn.rollback()
    assert [(name, type_.rsplit(".", 1)[-1]) for name, type_, _ in returned] == [
        ("search_memories_by_vector", "memory_hit")
    ]


def test_no_live_file_makes_a_type() -> None:
    """A type's fields change by a revision (ALTER TYPE), so no file of sql/, run again whenever it
    changes, makes one."""
    making = {path.name for path in SQL.glob("*.sql") if "CREATE TYPE" in path.read_text(encoding="utf-8")}
    assert making == set()


def test_revision_0008_makes_the_types_a_schema_lacks(new_database: Callable[[], str]) -> None:
    """A schema at 0007 without the types (as one whose files were applied before them) gets both
    from revision 0008, with their comments, and its search functions from the files after it."""
    url = new_database()
    settings = Settings(database_url=url, embedding_queue_workers=0)
    migrations.upgrade(settings, "head")
    migrations.downgrade(settings, "0007")
    with psycopg.connect(url) as conn:
        conn.execute("DROP TYPE pgmem.memory_hit, pgmem.memory_filter CASCADE")
        conn.execute("UPDATE pgmem.sql_applied SET checksum = 'older'")
    migrations.upgrade(settings, "head")
    with psycopg.connect(url) as conn:
        described = conn.execute(
            "SELECT t.typname, obj_description(t.oid, 'pg_type') IS NOT NULL FROM pg_type t"
            " WHERE t.typnamespace = 'pgmem'::regnamespace AND t.typname IN ('memory_hit', 'memory_filter')"
            " ORDER BY 1"
        ).fetchall()
        returned = conn.execute(RETURNS, ("pgmem", list(SEARCHES))).fetchall()
    assert described == [("memory_filter", True), ("memory_hit", True)]
    assert [type_.rsplit(".", 1)[-1] for _, type_, _ in returned] == ["memory_hit", "memory_hit"]


def test_a_bare_call_reads_each_hit_typed_as_the_call_in_from_does(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    """The bare ``SELECT search_memories(…)`` that Citus delegates, read in binary as the library
    reads it there, gives each hit's fields typed, equal to the rows of the call in FROM."""
    manager = make_manager("hits")
    manager.add_memories(
        ["the garden roses need water", "roses bloom in june", "the car is red"],
        "episodic",
        session_ids=["garden", "garden", "car"],
    )
    sent = manager.search_sql(MemorySearch("garden roses", limit=5, session_id="garden"))
    assert sent.delegated is not None
    with clean.transaction(manager.user_id) as conn:
        plain = conn.execute(sent.text, sent.params).fetchall()
        bare = [tuple(row[0]) for row in conn.execute(sent.delegated, sent.params, binary=True)]
    assert len(plain) == 2 and bare == [tuple(row) for row in plain]
