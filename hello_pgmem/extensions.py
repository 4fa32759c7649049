"""Checks for the PostgreSQL extensions hello_pgmem needs: pgvector (required) and AGE (optional).

Migrations call :func:`ensure_vector` and :func:`ensure_age`; they create an extension when the
role may, and otherwise fail with the exact statement to hand to a DBA.
"""

from __future__ import annotations

import logging
from typing import Literal

from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from hello_pgmem.errors import ExtensionMissingError

log = logging.getLogger(__name__)

MIN_VECTOR = (0, 8, 0)
AGE_MIN = (1, 5, 0)

_INSTALLED = text("SELECT extversion FROM pg_extension WHERE extname = :name")
_AVAILABLE = text("SELECT default_version FROM pg_available_extensions WHERE name = :name")
_WHERE = text("SELECT current_database(), current_user")


def version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _create(conn: Connection, name: str, statement: str) -> bool:
    """Try ``statement`` in a savepoint; False when the role lacks the privilege."""
    try:
        with conn.begin_nested():
            conn.exec_driver_sql(statement)
    except DBAPIError as exc:
        if getattr(exc.orig, "sqlstate", None) == "42501":  # insufficient_privilege
            return False
        raise
    log.info("created extension %s", name)
    return True


def ensure_vector(conn: Connection) -> str:
    """Make sure pgvector >= 0.8.0 is installed in this database; return its version."""
    version = conn.execute(_INSTALLED, {"name": "vector"}).scalar()
    statement = "CREATE EXTENSION vector;"
    if version is None:
        database, role = conn.execute(_WHERE).one()
        if conn.execute(_AVAILABLE, {"name": "vector"}).scalar() is None:
            raise ExtensionMissingError(
                f"pgvector is not available on this server (database {database!r}): install the "
                f"postgresql-17-pgvector package or your platform's pgvector, then have a "
                f"superuser "
                f"run: {statement}",
                statement,
            )
        if not _create(conn, "vector", "CREATE EXTENSION IF NOT EXISTS vector"):
            raise ExtensionMissingError(
                f"pgvector is not installed in database {database!r} and role {role!r} may not "
                f"create it: ask a superuser to run: {statement}",
                statement,
            )
        version = conn.execute(_INSTALLED, {"name": "vector"}).scalar_one()
    if version_tuple(version) < MIN_VECTOR:
        statement = "ALTER EXTENSION vector UPDATE;"
        raise ExtensionMissingError(
            f"pgvector {version} is too old, 0.8.0 or newer is needed for iterative index scans: "
            f"upgrade the package, then have a superuser run: {statement}",
            statement,
        )
    return str(version)


def ensure_age(conn: Connection, mode: Literal["auto", "on", "off"]) -> str | None:
    """Install Apache AGE when available (``auto``), required (``on``) or never (``off``).

    Returns the installed version, or None when hello_pgmem runs without AGE.
    """
    if mode == "off":
        return None
    version = conn.execute(_INSTALLED, {"name": "age"}).scalar()
    if version is None:
        available = conn.execute(_AVAILABLE, {"name": "age"}).scalar() is not None
        statement = "CREATE EXTENSION age;"
        if available and _create(conn, "age", "CREATE EXTENSION IF NOT EXISTS age"):
            version = conn.execute(_INSTALLED, {"name": "age"}).scalar_one()
        elif mode == "on":
            why = "may not be created by this role" if available else "is not available on this server"
            raise ExtensionMissingError(
                f"Apache AGE {why} and PGMEM_AGE=on: have a superuser run: {statement}", statement
            )
        else:
            log.warning("Apache AGE is not installed: everything works except the Cypher interface")
            return None
    if version_tuple(version) < AGE_MIN:
        raise ExtensionMissingError(f"Apache AGE {version} is too old, 1.5.0 or newer is needed")
    return str(version)
