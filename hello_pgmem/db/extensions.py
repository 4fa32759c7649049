"""Checks for the PostgreSQL extensions hello_pgmem needs: pgvector (required) and AGE (optional).

Migrations call :func:`ensure_vector` and :func:`ensure_age`; they create an extension when the
role may, and otherwise fail with the exact statement to hand to a DBA.
"""

from __future__ import annotations

import logging
from typing import Literal

from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from hello_pgmem.core.errors import ExtensionMissingError

log = logging.getLogger(__name__)

MIN_VECTOR = (0, 8, 0)
AGE_MIN = (1, 5, 0)

_INSTALLED = text("SELECT extversion FROM pg_extension WHERE extname = :name")
_AVAILABLE = text("SELECT default_version FROM pg_available_extensions WHERE name = :name")
_WHERE = text("SELECT current_database(), current_user")
_SCHEMA_OF = text(
    "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
    " WHERE e.extname = :name"
)


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


def ensure_extension(
    conn: Connection, name: str, package: str | None = None, *, beside: str | None = None
) -> str:
    """Make sure extension ``name`` is installed in this database (create it when the role may,
    in the schema of extension ``beside`` if given); return its version, or raise
    ExtensionMissingError with the statement for a DBA."""
    version = conn.execute(_INSTALLED, {"name": name}).scalar()
    if version is not None:
        return str(version)
    schema = conn.execute(_SCHEMA_OF, {"name": beside}).scalar() if beside else None
    where = f" SCHEMA {conn.dialect.identifier_preparer.quote_identifier(schema)}" if schema else ""
    statement = f"CREATE EXTENSION {name}{where};"
    database, role = conn.execute(_WHERE).one()
    if conn.execute(_AVAILABLE, {"name": name}).scalar() is None:
        source = f"the {package} package or your platform's {name}" if package else f"the {name} extension"
        raise ExtensionMissingError(
            f"{name} is not available on this server (database {database!r}): install {source}, "
            f"then have a superuser run: {statement}",
            statement,
        )
    if not _create(conn, name, f"CREATE EXTENSION IF NOT EXISTS {name}{where}"):
        raise ExtensionMissingError(
            f"{name} is not installed in database {database!r} and role {role!r} may not create it: "
            f"ask a superuser to run: {statement}",
            statement,
        )
    return str(conn.execute(_INSTALLED, {"name": name}).scalar_one())


def ensure_vector(conn: Connection) -> str:
    """Make sure pgvector >= 0.8.0 is installed in this database; return its version."""
    version = ensure_extension(conn, "vector", "postgresql-17-pgvector")
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
    if conn.execute(_INSTALLED, {"name": "citus"}).scalar() is not None:
        if mode == "on":
            raise ExtensionMissingError(
                "Apache AGE cannot be distributed and this is a Citus coordinator: set PGMEM_AGE=off or auto"
            )
        log.info("Citus: Apache AGE is not used (the relational graph answers every graph question)")
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
