"""Locate the SQL scripts and Alembic migrations, in a source checkout or an installed wheel."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_SOURCE_NAMES = {"sql": "sql", "migrations": "alembic"}


def resource_dir(name: str) -> Path:
    """The folder ``sql`` or ``migrations``: in the package when installed, else in the checkout."""
    installed = _PACKAGE / name
    if installed.is_dir():
        return installed
    source = _PACKAGE.parent / _SOURCE_NAMES[name]
    if source.is_dir():
        return source
    raise FileNotFoundError(f"hello_pgmem resource folder {name!r} is missing: reinstall the package")


def read_sql(filename: str) -> str:
    """The text of one script in ``sql/``, e.g. ``read_sql("scoring--0001.sql")``."""
    return (resource_dir("sql") / filename).read_text(encoding="utf-8")
