"""Fixtures: a real PostgreSQL 17 with pgvector and AGE, brought up by scripts/devdb.

The session gets a fresh database, migrated to head, and drops it at the end; tests that need
their own database (migrations, missing extensions) ask ``new_database`` for one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from hello_pgmem import Database, Settings, migrations

REPO = Path(__file__).resolve().parent.parent


def _devdb(*args: str) -> str:
    done = subprocess.run(
        [str(REPO / "scripts" / "devdb"), *args],
        check=True,
        text=True,
        capture_output=True,
        env={**os.environ, "PYTHON": sys.executable},
    )
    return done.stdout.strip()


@pytest.fixture(scope="session")
def server_url() -> str:
    """The URL of the server's maintenance database, after ``scripts/devdb up``."""
    url = _devdb("up")
    return psycopg.conninfo.make_conninfo(url, dbname="postgres")


@pytest.fixture(scope="session")
def new_database(server_url: str) -> Iterator[Callable[[], str]]:
    """A factory of empty databases (dropped at the end of the session); returns their URLs."""
    created: list[str] = []

    def make() -> str:
        name = f"pgmem_test_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        created.append(name)
        return psycopg.conninfo.make_conninfo(server_url, dbname=name)

    yield make
    with psycopg.connect(server_url, autocommit=True) as conn:
        for name in created:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture(scope="session")
def settings(new_database: Callable[[], str]) -> Settings:
    """Settings for the session's database, migrated to head."""
    result = Settings(database_url=new_database())
    migrations.upgrade(result)
    return result


@pytest.fixture(scope="session")
def database(settings: Settings) -> Iterator[Database]:
    with Database(settings) as db:
        yield db


TABLES = (
    "relations",
    "mentions",
    "entities",
    "embedding_cache",
    "chunks",
    "documents",
    "working_memories",
    "memories",
)


@pytest.fixture()
def conn(database: Database) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A configured connection whose work is rolled back after the test."""
    with database.connection() as connection:
        yield connection
        connection.rollback()


@pytest.fixture()
def clean(database: Database) -> Iterator[Database]:
    """The session database, emptied of rows after the test (for tests that commit)."""
    yield database
    with database.connection() as connection:
        connection.execute("TRUNCATE " + ", ".join(TABLES))
