"""What a search of memories looks for: one frozen value (:class:`MemorySearch`) carried whole from
the API to the statement that ranks, each field checked once."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import (
    LONG_TERM_TYPES,
    MemoryConfig,
    MemoryType,
    check_content,
    check_importance,
    check_limit,
    check_memory_type,
    check_modality,
    check_scoring,
    check_session_id,
    check_timestamp,
)
from hello_pgmem.graph.store import AsOf
from hello_pgmem.memory._exclusions import without_exclusions

TimeRange = tuple[datetime | None, datetime | None]


@dataclass(frozen=True)
class MemorySearch:
    """What a search looks for, carried whole from the API to the statement that ranks.

    ``memory_types`` None means the manager's enabled types; ``time_range`` bounds the memories'
    time; ``session_id`` keeps one session; ``scoring`` (hybrid, lexical, vector or reference)
    overrides the configured one; ``valid_at`` and ``known_at`` search what held at one time as
    the store knew it at another (docs/temporal.md). A query of another modality than text is a
    file path and searches perceptual memory of that modality. :meth:`checked` returns the same
    search with every field checked and resolved.
    """

    query: str
    memory_types: Sequence[str] | None = None
    limit: int = 10
    min_importance: float = 0.0
    time_range: TimeRange | None = None
    per_type_limit: int | None = None
    target_modality: str | None = None
    query_modality: str = "text"
    scoring: str | None = None
    valid_at: datetime | str | None = None
    known_at: datetime | str | None = None
    session_id: str | None = None

    def checked(self, config: MemoryConfig, enabled: Sequence[MemoryType]) -> MemorySearch:
        """This search with each field checked (InvalidInputError names it) and resolved: the
        types (the enabled ones by default, each enabled), the per-type limit, the scoring."""
        text = check_content(self.query, config.max_content_chars, "query")
        top = check_limit(self.limit, config.max_search_limit)
        per_type = (
            top
            if self.per_type_limit is None
            else check_limit(self.per_type_limit, config.max_search_limit, "per_type_limit")
        )
        check_modality(self.query_modality, "query_modality")
        if self.target_modality is not None:
            check_modality(self.target_modality, "target_modality")
        types: list[MemoryType] = ["perceptual"]
        if self.query_modality == "text":
            types = [check_memory_type(k, "memory_types") for k in (self.memory_types or enabled)]
        as_of = AsOf.checked(self.valid_at, self.known_at)
        if as_of is not None:
            if self.time_range is not None or self.query_modality != "text":
                raise InvalidInputError("valid_at", "an as-of search takes no time_range and a text query")
            types = [kind for kind in types if kind in LONG_TERM_TYPES]
            if not types:
                raise InvalidInputError("memory_types", "an as-of search needs a long-term memory type")
        for kind in types:
            if kind not in enabled:
                raise InvalidInputError(
                    "memory_type", f"{kind!r} is not enabled (enabled: {', '.join(enabled)})"
                )
        bounds = None
        if self.time_range is not None:
            if isinstance(self.time_range, (str, bytes)) or len(self.time_range) != 2:
                raise InvalidInputError("time_range", "must be a pair (start, end), either of them None")
            since, until = self.time_range
            bounds = (
                None if since is None else check_timestamp(since, "time_range[0]"),
                None if until is None else check_timestamp(until, "time_range[1]"),
            )
            if bounds[0] is not None and bounds[1] is not None and bounds[0] > bounds[1]:
                raise InvalidInputError("time_range", "its start must not be after its end")
        return dataclasses.replace(
            self,
            query=text,
            time_range=bounds,
            memory_types=tuple(dict.fromkeys(types)),
            limit=top,
            per_type_limit=per_type,
            min_importance=check_importance(self.min_importance, "min_importance"),
            scoring=check_scoring(self.scoring or config.scoring),
            valid_at=None if as_of is None else as_of.valid_at,
            known_at=None if as_of is None else as_of.known_at,
            session_id=check_session_id(self.session_id),
        )

    @property
    def types(self) -> tuple[MemoryType, ...]:
        """The types searched, as checked."""
        return tuple(check_memory_type(kind, "memory_types") for kind in self.memory_types or ())

    @property
    def as_of(self) -> AsOf | None:
        """The as-of point of a checked search (None: the present)."""
        return AsOf.checked(self.valid_at, self.known_at)

    @property
    def since(self) -> datetime | None:
        return (self.time_range or (None, None))[0]

    @property
    def until(self) -> datetime | None:
        return (self.time_range or (None, None))[1]

    @property
    def floor(self) -> float | None:
        """The minimum importance, None when it keeps everything."""
        return self.min_importance or None

    @cached_property
    def ranked_text(self) -> str:
        """What the ranking reads of the query: without what it sets aside ("besides …")."""
        return without_exclusions(self.query)

    def long_term(self) -> tuple[list[MemoryType], list[MemoryType]]:
        """The long-term types ranked together by one statement, and those ranked each by the
        reference's formula (every type under "reference"; perceptual memory when a modality is
        asked, which filters perceptual memory only)."""
        long_term: list[MemoryType] = [kind for kind in self.types if kind != "working"]
        if self.as_of is not None:
            return long_term, []
        separate = list(long_term) if self.scoring == "reference" else []
        if self.target_modality is not None and "perceptual" in long_term:
            separate = list(dict.fromkeys([*separate, "perceptual"]))
        return [kind for kind in long_term if kind not in separate], separate
