"""Search across memory types, and the manager's search methods that call it directly: working
memory ranked by its own scoring, the long-term types in one statement (:mod:`.hybrid`), one
merged list, its accesses logged and the search recorded in the retrieval log."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import (
    LONG_TERM_TYPES,
    MemoryConfig,
    MemoryItem,
    MemoryType,
    Scoring,
    check_content,
    check_importance,
    check_limit,
    check_memory_type,
    check_scoring,
)
from hello_pgmem.core.retry import retry_transient
from hello_pgmem.db import Database
from hello_pgmem.db.retrieval_log import log_retrieval
from hello_pgmem.graph.store import AsOf
from hello_pgmem.memory import hybrid
from hello_pgmem.memory.parts import MemoryParts
from hello_pgmem.memory.perceptual import PerceptualMemory
from hello_pgmem.memory.working import WorkingMemory


@dataclass(frozen=True)
class SearchRequest:
    """A checked search: what to look for, in which types, with which filters."""

    query: str
    kinds: Sequence[MemoryType]
    limit: int
    per_type: int
    min_importance: float | None = None
    since: datetime | None = None
    until: datetime | None = None
    target_modality: str | None = None
    query_modality: str = "text"
    scoring: Scoring | None = None
    as_of: AsOf | None = None

    @classmethod
    def checked(
        cls,
        config: MemoryConfig,
        query: object,
        kinds: Sequence[object],
        limit: object,
        per_type_limit: object,
        min_importance: object,
        time_range: tuple[datetime | None, datetime | None] | None,
        target_modality: str | None,
        query_modality: str,
        scoring: object = None,
        valid_at: object = None,
        known_at: object = None,
    ) -> SearchRequest:
        """A request from a caller's arguments, each checked (InvalidInputError names the field)."""
        text = check_content(query, config.max_content_chars, "query")
        top = check_limit(limit, config.max_search_limit)
        per_type = (
            top
            if per_type_limit is None
            else check_limit(per_type_limit, config.max_search_limit, "per_type_limit")
        )
        types: list[MemoryType] = ["perceptual"]
        if query_modality == "text":
            types = [check_memory_type(k, "memory_types") for k in kinds]
        since, until = time_range or (None, None)
        as_of = AsOf.checked(valid_at, known_at)
        if as_of is not None:
            if since is not None or until is not None or query_modality != "text":
                raise InvalidInputError("valid_at", "an as-of search takes no time_range and a text query")
            types = [kind for kind in types if kind in LONG_TERM_TYPES]
            if not types:
                raise InvalidInputError("memory_types", "an as-of search needs a long-term memory type")
        return cls(
            text,
            list(dict.fromkeys(types)),
            top,
            per_type,
            check_importance(min_importance, "min_importance") or None,
            since,
            until,
            target_modality,
            query_modality,
            None if scoring is None else check_scoring(scoring),
            as_of,
        )


def search(parts: MemoryParts, request: SearchRequest, track_access: bool = True) -> list[MemoryItem]:
    """The best ``limit`` memories of the asked types (each type at most ``per_type``), best first;
    with ``track_access`` an access of each long-term one is logged (never for an as-of search:
    it reads the past)."""
    started = time.perf_counter()
    track_access = track_access and request.as_of is None
    results, logged = ranked(parts, request, track_access)
    results = best_first(results, request.limit)
    if track_access and not logged:
        record_access(parts, [item.id for item in results if item.memory_type != "working"])
    elapsed_ms = (time.perf_counter() - started) * 1000
    log_retrieval(
        parts.db, parts.user_id, "memory", request.query, [(i.id, i.score) for i in results], elapsed_ms
    )
    return results


def best_first(results: list[MemoryItem], limit: int) -> list[MemoryItem]:
    """The ``limit`` best of results merged from several rankings: by score, then importance."""
    results.sort(key=lambda item: (-(item.score or 0.0), -item.importance, str(item.id)))
    return results[:limit]


def search_sql(parts: MemoryParts, request: SearchRequest) -> hybrid.SearchSQL:
    """The statement the long-term part of ``request`` sends (not run): for analysts and bug
    reports. Working memory is ranked in Python and has none."""
    joint, _ = long_term_split(parts, request)
    if not joint or request.query_modality != "text":
        raise InvalidInputError(
            "memory_types", "a search of long-term memory with a text query has SQL to show"
        )
    vector = parts.registered_embedder.encode_one(request.query)
    return joint_statement(parts, request, joint, vector, log_access=False)


def long_term_split(parts: MemoryParts, request: SearchRequest) -> tuple[list[str], list[str]]:
    """The long-term types ranked together by ``search_memories``, and those ranked each by its
    own (the reference's formulas; perceptual memory when a modality is asked)."""
    long_term: list[str] = [kind for kind in request.kinds if kind != "working"]
    if request.as_of is not None:  # one statement over every version
        return long_term, []
    scoring = request.scoring or parts.config.scoring
    separate: list[str] = list(long_term) if scoring == "reference" else []
    if request.target_modality is not None and "perceptual" in long_term:
        separate = list(dict.fromkeys([*separate, "perceptual"]))  # the modality filters perceptual only
    return [kind for kind in long_term if kind not in separate], separate


def joint_statement(
    parts: MemoryParts, request: SearchRequest, types: list[str], vector: Any, log_access: bool
) -> hybrid.SearchSQL:
    """The one statement that ranks ``types`` together."""
    config = parts.config
    return hybrid.statement(
        parts.db,
        parts.user_id,
        parts.registered_embedder,
        request.query,
        request.limit,
        types=types,
        vector=vector,
        now=parts.clock(),
        scoring=request.scoring or config.scoring,
        fusion=config.fusion,
        graph_search=config.graph_search,
        per_type=request.per_type,
        filters=hybrid.Filters(None, request.since, request.until, request.min_importance),
        log_access=log_access,
        as_of=request.as_of,
    )


def ranked(
    parts: MemoryParts, request: SearchRequest, track_access: bool = False
) -> tuple[list[MemoryItem], bool]:
    """Each asked type's results: working memory by its own scoring; the long-term types in one
    hybrid search (one query vector, one statement, scores comparable across types), or each by
    the reference's formula when the scoring is "reference". True when that one statement also
    logged the accesses (its results are all the results: nothing else was asked)."""
    floor, since, until = request.min_importance, request.since, request.until
    results: list[MemoryItem] = []
    if "working" in request.kinds:
        results += parts.working.retrieve(
            request.query, request.per_type, min_importance=floor, since=since, until=until
        )
    if not any(kind != "working" for kind in request.kinds):
        return results, False
    if request.query_modality != "text":  # a file: perceptual memory of its modality
        return results + parts.perceptual.retrieve(
            request.query,
            request.per_type,
            target_modality=request.target_modality,
            query_modality=request.query_modality,
            min_importance=floor,
            since=since,
            until=until,
        ), False
    vector = parts.registered_embedder.encode_one(request.query)
    joint, separate = long_term_split(parts, request)
    log_in_search = track_access and not results and not separate
    if joint:
        statement = joint_statement(parts, request, joint, vector, log_in_search)
        results += hybrid.run(parts.db, parts.user_id, statement, log_in_search)
    scoring = request.scoring or parts.config.scoring
    for kind in separate:
        store = parts.of_type(kind)  # type: ignore[arg-type]
        assert not isinstance(store, WorkingMemory)
        common: dict[str, Any] = {"vector": vector, "min_importance": floor, "since": since, "until": until}
        if isinstance(store, PerceptualMemory):
            common["target_modality"] = request.target_modality
        results += store.retrieve(request.query, request.per_type, scoring=scoring, **common)
    return results, log_in_search


def record_access(parts: MemoryParts, memory_ids: Sequence[UUID]) -> None:
    """Log one access (and its time) for each memory: one round trip, nothing written to memories
    (``fold_accesses`` moves the log into the counters; maintain and decay run it)."""
    if memory_ids:
        with parts.db.transaction(parts.user_id, pipeline=True) as conn:
            hybrid.log_accesses(parts.db, conn, parts.user_id, memory_ids, parts.clock())


class SearchesMemories:
    """The search methods of MemoryManager: the API calls the search of this module directly."""

    db: Database
    parts: MemoryParts
    config: MemoryConfig
    enabled_types: list[MemoryType]

    def require_enabled(self, memory_type: str) -> None:
        """InvalidInputError naming the enabled types, unless ``memory_type`` is one of them."""
        if memory_type not in self.enabled_types:
            enabled = ", ".join(self.enabled_types)
            raise InvalidInputError("memory_type", f"{memory_type!r} is not enabled (enabled: {enabled})")

    @retry_transient
    def retrieve_memories(
        self,
        query: str,
        memory_types: Sequence[str] | None = None,
        limit: int = 10,
        min_importance: float = 0.0,
        time_range: tuple[datetime | None, datetime | None] | None = None,
        per_type_limit: int | None = None,
        target_modality: str | None = None,
        query_modality: str = "text",
        track_access: bool = True,
        scoring: str | None = None,
        *,
        valid_at: datetime | str | None = None,
        known_at: datetime | str | None = None,
    ) -> list[MemoryItem]:
        """Search the enabled types, merged by relevance score (then importance), best first.

        ``target_modality`` and ``query_modality`` concern perceptual memory; a query of another
        modality than text is a file path and searches perceptual memory only. ``scoring``
        (hybrid, lexical, vector or reference) overrides the configured one for this search.
        ``valid_at`` and ``known_at`` search what held at one time as the store knew it at
        another (each now when not given; docs/temporal.md); by default, the current truth as
        currently known.
        """
        request = self._request(
            query,
            memory_types,
            limit,
            min_importance,
            time_range,
            per_type_limit,
            target_modality,
            query_modality,
            scoring,
            valid_at,
            known_at,
        )
        return search(self.parts, request, track_access)

    def search_sql(
        self,
        query: str,
        memory_types: Sequence[str] | None = None,
        limit: int = 10,
        min_importance: float = 0.0,
        time_range: tuple[datetime | None, datetime | None] | None = None,
        per_type_limit: int | None = None,
        scoring: str | None = None,
        *,
        valid_at: datetime | str | None = None,
        known_at: datetime | str | None = None,
    ) -> hybrid.SearchSQL:
        """The SQL and parameters that :meth:`retrieve_memories` sends for its long-term part, not
        run (``.literal(conn)`` renders it for psql). Working memory is ranked in Python."""
        request = self._request(
            query,
            memory_types,
            limit,
            min_importance,
            time_range,
            per_type_limit,
            None,
            "text",
            scoring,
            valid_at,
            known_at,
        )
        return search_sql(self.parts, request)

    def search_explained(
        self,
        query: str,
        limit: int = 10,
        scoring: str | None = None,
        *,
        valid_at: datetime | str | None = None,
        known_at: datetime | str | None = None,
    ) -> tuple[list[MemoryItem], hybrid.SearchSQL | None]:
        """The long-term search of :meth:`retrieve_memories` (no access logged) and the one
        statement it sent, the query embedded once; no statement for the reference's scoring,
        which ranks each type by a statement of its own."""
        kinds = [kind for kind in self.enabled_types if kind in LONG_TERM_TYPES]
        request = self._request(
            query, kinds, limit, 0.0, None, None, None, "text", scoring, valid_at, known_at
        )
        if long_term_split(self.parts, request)[1]:
            return search(self.parts, request, track_access=False), None
        statement = search_sql(self.parts, request)
        found = hybrid.run(self.parts.db, self.parts.user_id, statement)
        return best_first(found, request.limit), statement

    def _request(
        self,
        query: str,
        memory_types: Sequence[str] | None,
        limit: int,
        min_importance: float,
        time_range: tuple[datetime | None, datetime | None] | None,
        per_type_limit: int | None,
        target_modality: str | None,
        query_modality: str,
        scoring: str | None,
        valid_at: object = None,
        known_at: object = None,
    ) -> SearchRequest:
        """A checked search of enabled types (InvalidInputError names the field)."""
        kinds = self.enabled_types if memory_types is None else memory_types
        request = SearchRequest.checked(
            self.config,
            query,
            kinds,
            limit,
            per_type_limit,
            min_importance,
            time_range,
            target_modality,
            query_modality,
            scoring,
            valid_at,
            known_at,
        )
        for kind in request.kinds:
            self.require_enabled(kind)
        return request

    def record_access(self, memory_ids: Sequence[UUID]) -> None:
        """Count one access (and its time) for each memory, in one statement."""
        record_access(self.parts, memory_ids)
