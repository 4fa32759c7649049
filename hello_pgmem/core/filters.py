"""A memory search's filters as one value: :class:`MemoryFilter`, which travels to SQL whole as the
composite type ``memory_filter`` (sql/filters.sql; adapted by :mod:`hello_pgmem.db.composites`).
No database code here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class MemoryFilter:
    """Which memories a search may return, each field None when it keeps every memory: the types,
    one session or the sessions under a prefix, a time range of creation, a least importance, a
    modality, and a jsonpath predicate on the metadata with its variables. Its fields are
    ``memory_filter``'s, in order."""

    memory_types: Sequence[str] | None = None
    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    min_importance: float | None = None
    modality: str | None = None
    session_prefix: str | None = None
    where_path: str | None = None
    where_vars: dict[str, Any] | None = None

    def beyond_types(self) -> bool:
        """Whether it keeps memories by more than their type (sql/filters.sql's ``_filters_beyond_types``)."""
        return any(
            getattr(self, name) is not None
            for name in self.field_names()
            if name not in ("memory_types", "where_vars")  # the variables go with where_path
        )

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The fields, in the composite's order."""
        return tuple(f.name for f in fields(cls))
