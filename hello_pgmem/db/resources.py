"""Locate the SQL and the Alembic environment: top-level ``sql/`` and ``alembic/`` in a checkout,
mapped into the package (``hello_pgmem/sql``, ``hello_pgmem/alembic``) in a wheel."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

_PACKAGE = Path(__file__).resolve().parents[1]

Folder = Literal["sql", "alembic"]


def resource_dir(name: Folder) -> Path:
    """The folder ``sql`` (functions and views) or ``alembic`` (the revisions and their scripts)."""
    for folder in (_PACKAGE / name, _PACKAGE.parent / name):
        if folder.is_dir():
            return folder
    raise FileNotFoundError(f"hello_pgmem resource folder {name!r} is missing: reinstall the package")


def read_sql(filename: str) -> str:
    """The text of one script of ``alembic/sql/``, e.g. ``read_sql("baseline.sql")``."""
    return (resource_dir("alembic") / "sql" / filename).read_text(encoding="utf-8")


def read_live_sql(filename: str) -> str:
    """The text of one file of ``sql/``: a family's functions and views, or ``citus/distribute.sql``."""
    return (resource_dir("sql") / filename).read_text(encoding="utf-8")
