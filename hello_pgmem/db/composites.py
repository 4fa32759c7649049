"""The composite types a connection sends and reads: :class:`~hello_pgmem.core.filters.MemoryFilter`
as ``memory_filter``, and a search's ``memory_hit`` read whole (a bare ``SELECT search_memories(…)``,
the form Citus delegates), registered once per connection by psycopg's own composite adapters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.types.composite import CompositeInfo, register_composite
from psycopg.types.json import Jsonb

from hello_pgmem.core.filters import MemoryFilter


def _fields(value: MemoryFilter, info: CompositeInfo) -> Sequence[Any]:
    """The composite's fields of ``value``, in the type's order (its variables as jsonb)."""
    row = [getattr(value, name) for name in info.field_names]
    return [Jsonb(x) if isinstance(x, dict) else x for x in row]


def adapt_memory_filter(conn: psycopg.Connection[Any]) -> bool:
    """Make ``conn`` send a MemoryFilter as the schema's ``memory_filter`` (in its search_path);
    False when the schema has no such type yet (not migrated)."""
    info = CompositeInfo.fetch(conn, "memory_filter")
    if info is None:
        return False
    if tuple(info.field_names) != MemoryFilter.field_names():
        raise RuntimeError(
            f"memory_filter has fields {info.field_names}, MemoryFilter {MemoryFilter.field_names()}"
        )
    register_composite(info, conn, MemoryFilter, make_sequence=_fields)
    return True


def adapt_memory_hit(conn: psycopg.Connection[Any]) -> bool:
    """Make ``conn`` read a ``memory_hit`` value as a named tuple of typed fields, in text or
    binary (unregistered, binary gives its bytes); False when the schema has no such type yet."""
    info = CompositeInfo.fetch(conn, "memory_hit")
    if info is None:
        return False
    register_composite(info, conn)
    return True
