"""sql/ holds the live definition of every function: running its files on a database at head
changes nothing, and they define every function the migrations leave in the schema."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from hello_pgmem import Database
from hello_pgmem.db.resources import read_live_sql
from tests.deployments import TestServer

SQL = Path(__file__).resolve().parent.parent / "sql"
CREATE = re.compile(r"^CREATE OR REPLACE FUNCTION (\w+)\s*\(", re.M)
DEFINITIONS = """
    SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid), obj_description(p.oid, 'pg_proc'),
           p.proacl::text
    FROM pg_proc p WHERE p.pronamespace = %s::regnamespace ORDER BY 1
"""


def live_files() -> list[Path]:
    return sorted(SQL.glob("*.sql"))


def test_every_live_function_is_defined_once_in_sql(database: Database) -> None:
    defined = [name for path in live_files() for name in CREATE.findall(path.read_text(encoding="utf-8"))]
    assert len(defined) == len(set(defined)), "a function is defined in two live files"
    with database.connection() as conn:
        names = {
            row[0]
            for row in conn.execute(
                "SELECT proname FROM pg_proc WHERE pronamespace = %s::regnamespace",
                (database.settings.schema_name,),
            ).fetchall()
        }
    assert set(defined) == names, "sql/ and the migrated schema disagree"


@pytest.mark.one_server
def test_running_the_live_files_at_head_changes_no_definition(
    test_server: TestServer, new_database: Callable[[], str]
) -> None:
    """The live files are what the revisions left: the same bodies, settings, comments, grants."""
    settings = test_server.settings(new_database())
    test_server.migrate(settings)
    schema = settings.schema_name
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        before = conn.execute(DEFINITIONS, (schema,)).fetchall()
        vector_schema = conn.execute(
            "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
        assert vector_schema is not None
        with conn.transaction():
            conn.execute(f"SET LOCAL search_path TO {schema}, {vector_schema[0]}, pg_temp")
            for path in live_files():
                conn.execute(read_live_sql(path.name).encode())
        after = conn.execute(DEFINITIONS, (schema,)).fetchall()
    changed = [b[0] for b, a in zip(before, after, strict=True) if b != a]
    assert len(before) == len(after) and not changed, f"sql/ differs from the migrations in {changed}"
