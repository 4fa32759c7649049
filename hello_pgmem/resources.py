"""Locate the SQL scripts and the Alembic migrations shipped inside the package."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """The folder ``sql`` or ``migrations`` inside the installed package."""
    folder = _PACKAGE / name
    if not folder.is_dir():
        raise FileNotFoundError(f"hello_pgmem resource folder {name!r} is missing: reinstall the package")
    return folder


def read_sql(filename: str) -> str:
    """The text of one script in ``hello_pgmem/sql/``, e.g. ``read_sql("scoring--0001.sql")``."""
    return (resource_dir("sql") / filename).read_text(encoding="utf-8")
