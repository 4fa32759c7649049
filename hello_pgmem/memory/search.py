"""Search across memory types: one query vector, each type's ranked search, one merged list."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from hello_pgmem.memory import queries as q
from hello_pgmem.memory.parts import MemoryParts
from hello_pgmem.memory.perceptual import PerceptualMemory
from hello_pgmem.memory.working import WorkingMemory
from hello_pgmem.models import (
    MemoryConfig,
    MemoryItem,
    MemoryType,
    check_content,
    check_importance,
    check_limit,
    check_memory_type,
)
from hello_pgmem.retrieval_log import log_retrieval


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
        )


def search(parts: MemoryParts, request: SearchRequest, track_access: bool = True) -> list[MemoryItem]:
    """Every type's best ``per_type``, merged by relevance score (then importance), best first."""
    started = time.perf_counter()
    long_term = [k for k in request.kinds if k != "working"]
    vector = None
    if long_term and request.query_modality == "text":
        vector = parts.registered_embedder.encode_one(request.query)  # once for every type
    floor, since, until = request.min_importance, request.since, request.until
    results: list[MemoryItem] = []
    for kind in request.kinds:
        store = parts.of_type(kind)
        if isinstance(store, WorkingMemory):
            results += store.retrieve(
                request.query, request.per_type, min_importance=floor, since=since, until=until
            )
        elif isinstance(store, PerceptualMemory):
            results += store.retrieve(
                request.query,
                request.per_type,
                vector=vector,
                target_modality=request.target_modality,
                query_modality=request.query_modality,
                min_importance=floor,
                since=since,
                until=until,
            )
        else:
            results += store.retrieve(
                request.query, request.per_type, vector=vector, min_importance=floor, since=since, until=until
            )
    results.sort(key=lambda item: (-(item.score or 0.0), -item.importance, str(item.id)))
    results = results[: request.limit]
    if track_access:
        record_access(parts, [item.id for item in results if item.memory_type != "working"])
    elapsed_ms = (time.perf_counter() - started) * 1000
    log_retrieval(
        parts.db, parts.user_id, "memory", request.query, [(i.id, i.score) for i in results], elapsed_ms
    )
    return results


def record_access(parts: MemoryParts, memory_ids: Sequence[UUID]) -> None:
    """Count one access (and its time) for each memory, in one statement."""
    if memory_ids:
        params = {"user_id": parts.user_id, "ids": list(memory_ids), "now": parts.clock()}
        with parts.db.transaction(parts.user_id) as conn:
            conn.execute(q.TRACK_ACCESS, params)
