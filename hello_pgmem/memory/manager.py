"""MemoryManager: one user's memories across types, every operation scoped to that user.

Differences from the reference, on purpose: searches across types are merged by relevance
score (the reference sorts by importance alone); ``min_importance`` and ``time_range`` are
honoured by every type; consolidation is atomic and caps importance at 1.0; ``clear_all``
clears this user only; ids are resolved among this user's memories only.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import cached_property
from typing import Any
from uuid import UUID

from hello_pgmem.db import Database
from hello_pgmem.embedding import Embedder, create_embedder
from hello_pgmem.errors import NotFoundError, ValidationError
from hello_pgmem.graph.extraction import Extraction, Extractor, create_extractor
from hello_pgmem.graph.projection import AgeProjection
from hello_pgmem.graph.store import EntityRef, GraphStore, Neighbourhood, PathStep
from hello_pgmem.llm import create_chat_client
from hello_pgmem.memory import consolidate
from hello_pgmem.memory.classify import classify, estimate_importance
from hello_pgmem.memory.episodic import EpisodicMemory
from hello_pgmem.memory.longterm import FORGET_STRATEGIES, LongTermMemory, row_to_item
from hello_pgmem.memory.perceptual import PerceptualMemory
from hello_pgmem.memory.semantic import SemanticMemory
from hello_pgmem.memory.working import WorkingMemory
from hello_pgmem.models import (
    LONG_TERM_TYPES,
    MEMORY_TYPES,
    MemoryConfig,
    MemoryItem,
    MemoryStats,
    MemoryType,
    TypeStats,
    check_content,
    check_importance,
    check_metadata,
    check_user_id,
    utcnow,
)
from hello_pgmem.perceptual.encoders import MediaEncoder, default_encoders
from hello_pgmem.retrieval_log import log_retrieval
from hello_pgmem.retry import retry_transient
from hello_pgmem.settings import Settings

MIN_PREFIX = 8
MAX_BATCH = 10_000
_HEX_PREFIX = re.compile(r"^[0-9a-f-]+$")
_FULL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HEX32 = re.compile(r"[0-9a-f]{32}")

FIND = """
SELECT memory_type, id FROM memories
WHERE user_id = %(user_id)s AND id = %(id)s AND forgotten_at IS NULL
UNION ALL
SELECT 'working', id FROM working_memories
WHERE user_id = %(user_id)s AND id = %(id)s AND expires_at > %(now)s
"""

FIND_PREFIX = """
SELECT id FROM memories
WHERE user_id = %(user_id)s AND forgotten_at IS NULL AND starts_with(id::text, %(prefix)s)
UNION ALL
SELECT id FROM working_memories
WHERE user_id = %(user_id)s AND expires_at > %(now)s AND starts_with(id::text, %(prefix)s)
LIMIT 2
"""

GET_LONG_TERM = """
SELECT id, memory_type, content, importance, session_id, modality, metadata, created_at
FROM memories WHERE user_id = %(user_id)s AND id = %(id)s AND forgotten_at IS NULL
"""

FIND_BY_METADATA = """
SELECT id FROM memories
WHERE user_id = %(user_id)s AND forgotten_at IS NULL AND metadata ->> %(key)s = %(value)s
"""

TRACK_ACCESS = """
UPDATE memories SET access_count = access_count + 1, last_accessed_at = %(now)s
WHERE user_id = %(user_id)s AND id = ANY(%(ids)s)
"""

REFRESH = """
UPDATE memories
SET access_count = access_count + 1, last_accessed_at = %(now)s,
    importance = greatest(importance, %(importance)s), updated_at = now()
WHERE user_id = %(user_id)s AND id = %(id)s AND forgotten_at IS NULL
"""

DELETE_LONG_TERM = "DELETE FROM memories WHERE user_id = %(user_id)s AND id = %(id)s"

CLEAR_USER = """
WITH graph AS (DELETE FROM entities WHERE user_id = %(user_id)s),
     long_term AS (DELETE FROM memories WHERE user_id = %(user_id)s RETURNING 1),
     working AS (DELETE FROM working_memories WHERE user_id = %(user_id)s RETURNING 1)
SELECT (SELECT count(*) FROM long_term) + (SELECT count(*) FROM working)
"""

TOP_BY_IMPORTANCE = """
SELECT id, memory_type, content, importance, session_id, modality, metadata, created_at
FROM (
    SELECT id, memory_type, content, importance, session_id, modality, metadata, created_at
    FROM memories
    WHERE user_id = %(user_id)s AND forgotten_at IS NULL AND memory_type = ANY(%(types)s)
      AND importance >= %(min_importance)s
    UNION ALL
    SELECT id, 'working', content, importance, session_id, NULL, metadata, created_at
    FROM working_memories
    WHERE user_id = %(user_id)s AND session_id IS NOT DISTINCT FROM %(session_id)s
      AND expires_at > %(now)s AND 'working' = ANY(%(types)s) AND importance >= %(min_importance)s
) AS everything
ORDER BY importance DESC, created_at DESC, id
LIMIT %(limit)s
"""


def _is_full_uuid(text: str) -> bool:
    return _FULL_UUID.fullmatch(text) is not None or _HEX32.fullmatch(text) is not None


def _check_name(value: object, field: str = "entity") -> str:
    """An entity name: non-blank text of at most 200 characters PostgreSQL can store."""
    return check_content(value, 200, field)


def _check_type(value: object, field: str = "memory_type") -> MemoryType:
    if value not in MEMORY_TYPES:
        raise ValidationError(field, f"must be one of {', '.join(MEMORY_TYPES)}, got {value!r}")
    return value


class MemoryManager:
    """The memories of one user: add, search, update, remove, forget, consolidate, stats."""

    def __init__(
        self,
        config: MemoryConfig | None = None,
        user_id: str = "default_user",
        enable_working: bool = True,
        enable_episodic: bool = True,
        enable_semantic: bool = True,
        enable_perceptual: bool = False,
        *,
        database: Database | None = None,
        embedder: Embedder | None = None,
        settings: Settings | None = None,
        session_id: str | None = None,
        clock: Callable[[], datetime] | None = None,
        extractor: Extractor | None = None,
        encoders: Mapping[str, MediaEncoder] | None = None,
    ) -> None:
        self.user_id = check_user_id(user_id)
        self._encoders = encoders
        self.config = config or MemoryConfig()
        base = settings or (database.settings if database else Settings())
        self.settings = Settings(**{**base.model_dump(), **self.config.settings_overrides()})
        self._owns_db = database is None
        self.db = database or Database(self.settings)
        self._embedder = embedder
        self._extractor = extractor
        self.session_id = session_id
        self.clock = clock or utcnow
        flags = {
            "working": enable_working,
            "episodic": enable_episodic,
            "semantic": enable_semantic,
            "perceptual": enable_perceptual,
        }
        self.enabled_types: list[MemoryType] = [t for t in MEMORY_TYPES if flags[t]]

    # ------------------------------------------------------------------ parts

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = create_embedder(self.settings)
        return self._embedder

    @property
    def extractor(self) -> Extractor:
        if self._extractor is None:
            self._extractor = create_extractor(create_chat_client(self.settings))
        return self._extractor

    @cached_property
    def graph(self) -> GraphStore:
        """The user's knowledge graph (projected into AGE when the graph exists)."""
        projection = AgeProjection(self.settings.graph_name) if self.db.graph_enabled else None
        return GraphStore(self.user_id, projection)

    @cached_property
    def working(self) -> WorkingMemory:
        return WorkingMemory(self.db, self.user_id, self.config, session_id=self.session_id, clock=self.clock)

    def _long_term_kwargs(self) -> dict[str, Any]:
        return {
            "clock": self.clock,
            "max_capacity": self.config.max_capacity,
            "candidate_multiplier": self.config.candidate_multiplier,
        }

    @cached_property
    def episodic(self) -> EpisodicMemory:
        return EpisodicMemory(self.db, self.embedder, self.user_id, **self._long_term_kwargs())

    @cached_property
    def semantic(self) -> SemanticMemory:
        return SemanticMemory(
            self.db,
            self.embedder,
            self.user_id,
            extractor=self.extractor,
            graph=self.graph,
            **self._long_term_kwargs(),
        )

    @cached_property
    def perceptual(self) -> PerceptualMemory:
        encoders = self._encoders if self._encoders is not None else default_encoders()
        return PerceptualMemory(
            self.db,
            self.embedder,
            self.user_id,
            encoders=encoders,
            modalities=self.config.perceptual_memory_modalities,
            **self._long_term_kwargs(),
        )

    def _of_type(self, memory_type: str) -> LongTermMemory:
        """The object for a long-term type, enabled or not (for memories that already exist)."""
        if memory_type == "perceptual":
            return self.perceptual
        return self.semantic if memory_type == "semantic" else self.episodic

    def store(
        self, memory_type: MemoryType
    ) -> WorkingMemory | EpisodicMemory | SemanticMemory | PerceptualMemory:
        """The object holding ``memory_type`` (which must be enabled)."""
        if memory_type not in self.enabled_types:
            raise ValidationError(
                "memory_type",
                f"{memory_type!r} is not enabled (enabled: {', '.join(self.enabled_types)})",
            )
        if memory_type == "working":
            return self.working
        if memory_type == "episodic":
            return self.episodic
        if memory_type == "perceptual":
            return self.perceptual
        return self.semantic

    def close(self) -> None:
        if self._owns_db:
            self.db.close()

    def __enter__(self) -> MemoryManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writing

    @retry_transient
    def add_memory(
        self,
        content: str,
        memory_type: str = "working",
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
        auto_classify: bool = False,
        extraction: Extraction | None = None,
    ) -> UUID:
        """Store a memory and return its id.

        Without ``importance`` the documented heuristic estimates it; with ``auto_classify``
        the type comes from ``metadata["type"]`` or the reference's keyword lists. A semantic
        memory's entities and relations are extracted, unless ``extraction`` gives them.
        """
        content = check_content(content, self.config.max_content_chars)
        meta = check_metadata(metadata)
        kind = classify(content, meta) if auto_classify else _check_type(memory_type)
        if auto_classify and kind not in self.enabled_types:
            kind = "working" if "working" in self.enabled_types else self.enabled_types[0]
        value = estimate_importance(content, meta) if importance is None else check_importance(importance)
        if self.session_id is not None:
            meta.setdefault("session_id", self.session_id)
        store = self.store(kind)
        item = MemoryItem.build(
            self.config.max_content_chars,
            content=content,
            memory_type=kind,
            user_id=self.user_id,
            timestamp=self.clock(),
            importance=value,
            metadata=meta,
        )
        if extraction is not None and isinstance(store, SemanticMemory):
            return store.add_many([item], prepared=[extraction])[0]
        return store.add(item)

    @retry_transient
    def add_memories(
        self,
        contents: Sequence[str],
        memory_type: str = "episodic",
        importance: float | Sequence[float] | None = None,
        metadata: Sequence[dict[str, Any]] | None = None,
    ) -> list[UUID]:
        """Add many memories of one long-term type in one transaction (the batch API)."""
        kind = _check_type(memory_type)
        if kind == "working":
            raise ValidationError(
                "memory_type", "the batch API takes long-term types; add working memory one by one"
            )
        if not contents or len(contents) > MAX_BATCH:
            raise ValidationError("contents", f"must hold between 1 and {MAX_BATCH} memories")
        metas = [check_metadata(m) for m in metadata] if metadata is not None else [{} for _ in contents]
        if len(metas) != len(contents):
            raise ValidationError("metadata", "must have one entry per content")
        if importance is None or isinstance(importance, int | float):
            values = [None if importance is None else check_importance(importance)] * len(contents)
        else:
            values = [check_importance(v) for v in importance]
        if len(values) != len(contents):
            raise ValidationError("importance", "must be one number, or one per content")
        now = self.clock()
        items = []
        for content, meta, value in zip(contents, metas, values, strict=True):
            text = check_content(content, self.config.max_content_chars)
            if self.session_id is not None:
                meta.setdefault("session_id", self.session_id)
            items.append(
                MemoryItem.build(
                    self.config.max_content_chars,
                    content=text,
                    memory_type=kind,
                    user_id=self.user_id,
                    timestamp=now,
                    importance=estimate_importance(text, meta) if value is None else value,
                    metadata=meta,
                )
            )
        store = self.store(kind)
        assert not isinstance(store, WorkingMemory)
        return store.add_many(items)

    @retry_transient
    def update_memory(
        self,
        memory_id: UUID | str,
        content: str | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> bool:
        """Change a memory's content, importance or metadata (merged). False if not found."""
        if content is None and importance is None and metadata is None:
            raise ValidationError("content", "give content, importance or metadata to update")
        content = None if content is None else check_content(content, self.config.max_content_chars)
        importance = None if importance is None else check_importance(importance)
        meta = None if metadata is None else check_metadata(metadata)
        found = self._locate(self._as_uuid(memory_id))
        if found is None:
            return False
        if found == "working":
            return self.working.update(self._as_uuid(memory_id), content, importance, meta)
        return self._of_type(found).update(self._as_uuid(memory_id), content, importance, meta)

    @retry_transient
    def remove_memory(self, memory_id: UUID | str) -> bool:
        """Delete one memory of this user for good. False if not found."""
        uid = self._as_uuid(memory_id)
        if self.working.remove(uid):
            return True
        with self.db.transaction(self.user_id) as conn:
            self.graph.unlink(conn, [uid])
            return conn.execute(DELETE_LONG_TERM, {"user_id": self.user_id, "id": uid}).rowcount == 1

    @retry_transient
    def forget_memories(
        self, strategy: str = "importance_based", threshold: float = 0.1, max_age_days: float = 30
    ) -> int:
        """Forget across the enabled types; return how many were forgotten."""
        if strategy not in FORGET_STRATEGIES:
            raise ValidationError(
                "strategy", f"must be one of {', '.join(FORGET_STRATEGIES)}, got {strategy!r}"
            )
        threshold = check_importance(threshold, "threshold")
        if (
            isinstance(max_age_days, bool)
            or not isinstance(max_age_days, int | float)
            or not (0 <= max_age_days <= 36500)
        ):
            raise ValidationError("max_age_days", "must be a number between 0 and 36500")
        total = 0
        for kind in self.enabled_types:
            total += self.store(kind).forget(strategy, threshold, max_age_days)
        return total

    @retry_transient
    def consolidate_memories(
        self,
        from_type: str = "working",
        to_type: str = "episodic",
        importance_threshold: float = 0.7,
    ) -> int:
        """Move memories at or above the threshold to a longer-lived type; return how many."""
        source = _check_type(from_type, "from_type")
        target = _check_type(to_type, "to_type")
        threshold = check_importance(importance_threshold, "importance_threshold")
        order = {"working": 0, "episodic": 1, "perceptual": 1, "semantic": 2}
        if target == "working" or order[target] <= order[source] or "perceptual" in (source, target):
            raise ValidationError(
                "to_type",
                f"cannot consolidate {source} into {target}: use working → episodic, "
                "working → semantic or episodic → semantic",
            )
        for kind in (source, target):
            self.store(kind)  # both types must be enabled
        now = self.clock()
        hooks: dict[str, Any] = {}
        if target == "semantic":  # moved memories join the knowledge graph in the same transaction
            hooks = {
                "prepare": self.semantic._prepare,
                "after_move": lambda conn, ids, _contents, prepared: self.semantic._after_write(
                    conn, ids, prepared, new=True
                ),
            }
        if source == "working":
            return consolidate.from_working(
                self.db, self.embedder, self.user_id, self.session_id, target, threshold, now, **hooks
            )
        return consolidate.between_long_term(self.db, self.user_id, source, target, threshold, now, **hooks)

    @retry_transient
    def clear_all(self) -> int:
        """Delete every memory of this user (all types, all sessions, their graph); others untouched."""
        with self.db.transaction(self.user_id) as conn:
            self.graph.clear(conn)
            row = conn.execute(CLEAR_USER, {"user_id": self.user_id}).fetchone()
        return int(row[0]) if row else 0

    clear_all_memories = clear_all

    # ------------------------------------------------------------------ reading

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
    ) -> list[MemoryItem]:
        """Search the enabled types, merged by relevance score (then importance), best first.

        Every long-term memory returned gets one more access counted (one statement).

        ``target_modality`` and ``query_modality`` concern perceptual memory; a query of another
        modality than text is a file path and searches perceptual memory only.
        """
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("query", "must be a non-empty string")
        check_content(query, self.config.max_content_chars)
        started = time.perf_counter()
        limit = self._check_limit(limit)
        per_type = limit if per_type_limit is None else self._check_limit(per_type_limit, "per_type_limit")
        min_importance = check_importance(min_importance, "min_importance")
        since, until = time_range or (None, None)
        kinds = (
            self.enabled_types
            if memory_types is None
            else [_check_type(t, "memory_types") for t in memory_types]
        )
        if query_modality != "text":
            kinds = ["perceptual"]
        results: list[MemoryItem] = []
        floor = min_importance or None
        for kind in dict.fromkeys(kinds):
            store = self.store(kind)
            if isinstance(store, PerceptualMemory):
                results += store.retrieve(
                    query,
                    per_type,
                    target_modality=target_modality,
                    query_modality=query_modality,
                    min_importance=floor,
                    since=since,
                    until=until,
                )
            else:
                results += store.retrieve(query, per_type, min_importance=floor, since=since, until=until)
        results.sort(key=lambda item: (-(item.score or 0.0), -item.importance, str(item.id)))
        results = results[:limit]
        if track_access:
            self.record_access([item.id for item in results if item.memory_type != "working"])
        log_retrieval(
            self.db,
            self.user_id,
            "memory",
            query,
            [(item.id, item.score) for item in results],
            (time.perf_counter() - started) * 1000,
        )
        return results

    def record_access(self, memory_ids: Sequence[UUID]) -> None:
        """Count one access (and its time) for each memory, in one statement."""
        if memory_ids:
            params = {"user_id": self.user_id, "ids": list(memory_ids), "now": self.clock()}
            with self.db.transaction(self.user_id) as conn:
                conn.execute(TRACK_ACCESS, params)

    def refresh_memory(self, memory_id: UUID, importance: float) -> bool:
        """A duplicate was seen again: count an access and keep the higher importance."""
        params = {
            "user_id": self.user_id,
            "id": memory_id,
            "now": self.clock(),
            "importance": check_importance(importance),
        }
        with self.db.transaction(self.user_id) as conn:
            return conn.execute(REFRESH, params).rowcount == 1

    def revise_memory(
        self,
        memory_id: UUID,
        content: str,
        importance: float | None = None,
        reason: str = "revised",
        history_limit: int = 20,
    ) -> bool:
        """Replace a memory's content and keep the previous version in ``metadata["history"]``."""
        old = self.get_memory(memory_id)
        if old is None:
            return False
        entry = {
            "content": old.content,
            "importance": old.importance,
            "until": self.clock().isoformat(),
            "reason": reason,
        }
        history = [*old.metadata.get("history", []), entry][-history_limit:]
        return self.update_memory(
            memory_id, content=content, importance=importance, metadata={"history": history}
        )

    def get_memory(self, memory_id: UUID | str) -> MemoryItem | None:
        uid = self._as_uuid(memory_id)
        item = self.working.get(uid)
        if item is not None:
            return item
        with self.db.transaction(self.user_id) as conn:
            row = conn.execute(GET_LONG_TERM, {"user_id": self.user_id, "id": uid}).fetchone()
        return None if row is None else row_to_item(self.user_id, row)

    def find_by_metadata(self, key: str, value: str) -> list[UUID]:
        """Ids of this user's live long-term memories whose ``metadata[key]`` equals ``value``."""
        with self.db.transaction(self.user_id) as conn:
            rows = conn.execute(
                FIND_BY_METADATA, {"user_id": self.user_id, "key": key, "value": value}
            ).fetchall()
        return [row[0] for row in rows]

    def has_memory(self, memory_id: UUID | str) -> bool:
        try:
            return self._locate(self._as_uuid(memory_id)) is not None
        except ValidationError:
            return False

    def important_memories(self, limit: int = 10, min_importance: float = 0.5) -> list[MemoryItem]:
        """The most important live memories of the enabled types."""
        params = {
            "user_id": self.user_id,
            "types": list(self.enabled_types),
            "limit": self._check_limit(limit),
            "min_importance": min_importance,
            "session_id": self.session_id,
            "now": self.clock(),
        }
        with self.db.transaction(self.user_id) as conn:
            rows = conn.execute(TOP_BY_IMPORTANCE, params).fetchall()
        return [row_to_item(self.user_id, row) for row in rows]

    def get_memory_stats(self) -> MemoryStats:
        by_type: dict[str, TypeStats] = {kind: self.store(kind).stats() for kind in self.enabled_types}
        return MemoryStats(
            user_id=self.user_id,
            enabled_types=list(self.enabled_types),
            total_memories=sum(s.count for s in by_type.values()),
            memories_by_type=by_type,
            config={
                "max_capacity": self.config.max_capacity,
                "importance_threshold": self.config.importance_threshold,
                "decay_factor": self.config.decay_factor,
            },
        )

    # ------------------------------------------------------------------ the knowledge graph

    def graph_neighbourhood(self, entity: str, depth: int = 1) -> Neighbourhood:
        """The entities within ``depth`` relations of ``entity`` and the relations among them."""
        with self.db.transaction(self.user_id) as conn:
            return self.graph.neighbourhood(conn, _check_name(entity), depth)

    def graph_path(self, source: str, target: str, max_depth: int = 4) -> list[PathStep]:
        """The shortest chain of relations between two entities ([] when not connected)."""
        with self.db.transaction(self.user_id) as conn:
            return self.graph.shortest_path(
                conn, _check_name(source), _check_name(target, "target"), max_depth
            )

    def memory_entities(self, memory_id: UUID | str) -> list[EntityRef]:
        with self.db.transaction(self.user_id) as conn:
            return self.graph.entities_of(conn, self._as_uuid(memory_id))

    def entity_memories(self, entity: str, limit: int = 20) -> list[MemoryItem]:
        """The live memories that mention ``entity``."""
        with self.db.transaction(self.user_id) as conn:
            rows = self.graph.memories_about(conn, _check_name(entity), self._check_limit(limit))
        return [row_to_item(self.user_id, row) for row in rows]

    def cypher(
        self, query: str, params: dict[str, Any] | None = None, columns: Sequence[str] = ("result",)
    ) -> list[tuple[Any, ...]]:
        """Cypher on this user's part of the AGE graph; the query must filter by ``$user_id``."""
        with self.db.transaction(self.user_id) as conn:
            return self.graph.cypher(conn, query, params, columns)

    def resolve_id(self, text: str) -> UUID:
        """A full id, or an unambiguous prefix of at least 8 characters among this user's memories."""
        if not isinstance(text, str) or not text.strip():
            raise ValidationError("memory_id", "must be a memory id")
        candidate = text.strip().lower()
        if _is_full_uuid(candidate):
            return UUID(candidate)
        if len(candidate) < MIN_PREFIX or not _HEX_PREFIX.match(candidate):
            raise ValidationError(
                "memory_id",
                f"must be a full id or a prefix of at least {MIN_PREFIX} hex characters",
            )
        params = {"user_id": self.user_id, "prefix": candidate, "now": self.clock()}
        with self.db.transaction(self.user_id) as conn:
            rows = conn.execute(FIND_PREFIX, params).fetchall()
        if not rows:
            raise NotFoundError(f"no memory of this user has an id starting with {candidate!r}")
        if len(rows) > 1:
            raise ValidationError(
                "memory_id", f"prefix {candidate!r} matches several memories: give more characters"
            )
        memory_id: UUID = rows[0][0]
        return memory_id

    # ------------------------------------------------------------------ helpers

    def _as_uuid(self, memory_id: UUID | str) -> UUID:
        if isinstance(memory_id, UUID):
            return memory_id
        try:
            return UUID(str(memory_id))
        except ValueError as exc:
            raise ValidationError("memory_id", f"must be a UUID, got {memory_id!r}") from exc

    def _locate(self, memory_id: UUID) -> str | None:
        params = {"user_id": self.user_id, "id": memory_id, "now": self.clock()}
        with self.db.transaction(self.user_id) as conn:
            row = conn.execute(FIND, params).fetchone()
        return None if row is None else str(row[0])

    def _check_limit(self, limit: object, field: str = "limit") -> int:
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 1 <= limit <= self.config.max_search_limit
        ):
            raise ValidationError(field, f"must be an integer between 1 and {self.config.max_search_limit}")
        return limit

    def __repr__(self) -> str:
        return f"MemoryManager(user={self.user_id!r}, types={self.enabled_types})"


__all__ = ["LONG_TERM_TYPES", "MemoryManager"]
