"""Extension checks: a role that cannot create pgvector gets the statement for its DBA."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest
from psycopg import sql

from hello_pgmem import (
    Database,
    ExtensionMissingError,
    SchemaNotMigratedError,
    Settings,
)
from hello_pgmem.db import migrations
from hello_pgmem.db.extensions import version_tuple
from hello_pgmem.ops import migrate


@pytest.fixture()
def unprivileged(server_url: str, new_database: Callable[[], str]) -> Iterator[str]:
    """A fresh database without pgvector, and the URL of a role that may create schemas there
    but not extensions."""
    url = new_database()
    role = f"pgmem_app_{uuid.uuid4().hex[:8]}"
    dbname = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        conn.execute(
            sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
                sql.Identifier(str(dbname)), sql.Identifier(role)
            )
        )
    yield psycopg.conninfo.make_conninfo(url, user=role)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_missing_pgvector_names_the_statement_for_the_dba(unprivileged: str) -> None:
    with pytest.raises(ExtensionMissingError) as caught:
        migrate.upgrade(Settings(database_url=unprivileged))
    assert caught.value.statement == "CREATE EXTENSION vector;"
    assert "ask a superuser to run: CREATE EXTENSION vector;" in str(caught.value)
    with psycopg.connect(unprivileged) as conn:
        assert conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'pgmem'").fetchone() is None


def test_age_required_but_not_creatable_is_an_error(unprivileged: str, server_url: str) -> None:
    dbname = psycopg.conninfo.conninfo_to_dict(unprivileged)["dbname"]
    with psycopg.connect(psycopg.conninfo.make_conninfo(server_url, dbname=dbname), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    with pytest.raises(ExtensionMissingError, match="CREATE EXTENSION age;"):
        migrate.upgrade(Settings(database_url=unprivileged, age="on"))
    # With AGE optional the same role migrates fine and works without the graph.
    migrate.upgrade(Settings(database_url=unprivileged, age="auto"))
    with Database(Settings(database_url=unprivileged)) as db:
        assert db.info.age_version is None
        assert db.info.revision == migrations.head_revision()


def test_unmigrated_schema_is_reported_with_the_fix(new_database: Callable[[], str]) -> None:
    url = new_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    with pytest.raises(SchemaNotMigratedError, match=r'never migrated.*run "hello-pgmem migrate"'):
        Database(Settings(database_url=url)).open()


def test_version_parsing() -> None:
    assert version_tuple("0.8.0") == (0, 8, 0)
    assert version_tuple("0.7.4") < (0, 8, 0)
    assert version_tuple("1.5.0-rc0") == (1, 5, 0)
