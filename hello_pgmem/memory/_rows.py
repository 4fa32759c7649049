"""Rows as memories: the one function that turns a row of any memory statement into a MemoryItem,
and the psycopg row factory that applies it by column name."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from psycopg import Cursor
from psycopg.rows import RowMaker

from hello_pgmem.core.models import MemoryItem

FIELDS = ("id", "memory_type", "content", "importance", "session_id", "modality", "metadata", "created_at")
VERSION = "version_id"
"""The column of an as-of search's hit that is an earlier version: its own id (``id`` is its memory's)."""
"""The columns that are fields of a memory; a ranked statement adds its score components and
``score`` after them."""


def memory_from_row(user_id: str, names: Sequence[str], values: Sequence[Any]) -> MemoryItem:
    """A memory of ``user_id`` from a row's column ``names`` and ``values``: the columns of
    ``FIELDS`` become its fields (a row without ``memory_type`` is working memory), ``score`` its
    score, and every other column one of its score ``components``."""
    row = dict(zip(names, values, strict=True))
    score = row.pop("score", None)
    version = row.pop(VERSION, None)
    components = {name: float(value) for name, value in row.items() if name not in FIELDS}
    return MemoryItem.model_construct(
        id=row["id"],
        content=row["content"],
        memory_type=row.get("memory_type", "working"),
        user_id=user_id,
        timestamp=row["created_at"],
        importance=float(row["importance"]),
        metadata=dict(row.get("metadata") or {}),
        session_id=row.get("session_id"),
        modality=row.get("modality"),
        score=None if score is None else float(score),
        components=components,
        version_id=version,
    )


def memory_rows(user_id: str) -> Callable[[Cursor[Any]], RowMaker[MemoryItem]]:
    """A psycopg row factory: each row of the cursor as :func:`memory_from_row` makes it."""

    def factory(cursor: Cursor[Any]) -> RowMaker[MemoryItem]:
        names = [column.name for column in cursor.description or ()]
        return lambda values: memory_from_row(user_id, names, values)

    return factory
