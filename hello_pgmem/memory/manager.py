"""MemoryManager: one user's memories across types, every operation scoped to that user.

Differences from the reference, on purpose: searches across types are merged by relevance
score (the reference sorts by importance alone); ``min_importance`` and ``time_range`` are
honoured by every type; consolidation is atomic and caps importance at 1.0; ``clear_all``
clears this user only; ids are resolved among this user's memories only.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any
from uuid import UUID

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import (
    MEMORY_TYPES,
    MemoryConfig,
    MemoryItem,
    MemoryStats,
    MemoryType,
    check_batch,
    check_content,
    check_days,
    check_importance,
    check_limit,
    check_memory_type,
    check_metadata,
    check_session_id,
    check_strategy,
    check_timestamp,
    check_timestamps,
    check_update,
    check_user_id,
    utcnow,
)
from hello_pgmem.core.retry import retry_transient
from hello_pgmem.core.settings import Settings
from hello_pgmem.db import Conn, Database, SharesDatabase
from hello_pgmem.embedding import Embedder
from hello_pgmem.graph.extracted import Extraction, Extractor
from hello_pgmem.graph.store import GraphStore
from hello_pgmem.memory import consolidate, ids, splits, summary, versions
from hello_pgmem.memory import queries as q
from hello_pgmem.memory.classify import classify
from hello_pgmem.memory.episodic import EpisodicMemory
from hello_pgmem.memory.in_transaction import WritesInTransaction
from hello_pgmem.memory.longterm import LongTermMemory
from hello_pgmem.memory.parts import MemoryParts, Part, Store
from hello_pgmem.memory.perceptual import PerceptualMemory
from hello_pgmem.memory.semantic import SemanticMemory
from hello_pgmem.memory.sessions import SessionSearch
from hello_pgmem.memory.user_graph import GraphQuestions
from hello_pgmem.memory.versions import Change, MemoryVersion
from hello_pgmem.memory.working import WorkingMemory
from hello_pgmem.perceptual.encoders import MediaEncoder


class MemoryManager(SessionSearch, GraphQuestions, WritesInTransaction, SharesDatabase):
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
        self.config = config or MemoryConfig()
        base = settings or (database.settings if database else Settings())
        self.settings = Settings(**{**base.model_dump(), **self.config.settings_overrides()})
        self.db, self._owns_db = Database.shared(database, self.settings)
        self.session_id = session_id = check_session_id(session_id)
        self.clock = clock or utcnow
        flags = (enable_working, enable_episodic, enable_semantic, enable_perceptual)
        self.enabled_types: list[MemoryType] = [t for t, on in zip(MEMORY_TYPES, flags, strict=True) if on]
        self.parts = MemoryParts(
            self.db,
            self.settings,
            self.config,
            self.user_id,
            session_id=session_id,
            clock=self.clock,
            embedder=embedder,
            extractor=extractor,
            encoders=encoders,
        )

    # ------------------------------------------------------------------ parts

    embedder = Part[Embedder]("embedder")
    extractor = Part[Extractor]("extractor")
    graph = Part[GraphStore]("graph")
    working = Part[WorkingMemory]("working")
    episodic = Part[EpisodicMemory]("episodic")
    semantic = Part[SemanticMemory]("semantic")
    perceptual = Part[PerceptualMemory]("perceptual")

    @property
    def registered_embedder(self) -> Embedder:
        """The text embedder, its model registered with the database (indexes and all), once."""
        return self.parts.registered_embedder

    @classmethod
    def of_types(cls, user_id: str, types: Collection[str], **options: Any) -> MemoryManager:
        """A manager of ``user_id`` with exactly the memory types named in ``types``."""
        on = [kind in types for kind in MEMORY_TYPES]
        return cls(options.pop("config", None), user_id, *on, **options)

    def store(self, memory_type: MemoryType) -> Store:
        """The object holding ``memory_type`` (which must be enabled)."""
        self.require_enabled(memory_type)
        return self.parts.of_type(memory_type)

    def transaction(self) -> AbstractContextManager[Conn]:
        """One transaction scoped to this user, for several writes that belong together."""
        return self.db.transaction(self.user_id)

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
        timestamp: datetime | str | None = None,
    ) -> UUID:
        """Store a memory and return its id.

        Without ``importance`` the documented heuristic estimates it; with ``auto_classify``
        the type comes from ``metadata["type"]`` or the reference's keyword lists. A semantic
        memory's entities and relations are extracted, unless ``extraction`` gives them.
        ``timestamp`` is when the event happened (long-term types; now by default).
        """
        content = check_content(content, self.config.max_content_chars)
        meta = check_metadata(metadata)
        kind = classify(content, meta) if auto_classify else check_memory_type(memory_type)
        if auto_classify and kind not in self.enabled_types:
            kind = "working" if "working" in self.enabled_types else self.enabled_types[0]
        when = self.clock() if timestamp is None else check_timestamp(timestamp)
        if timestamp is not None and kind == "working":
            raise InvalidInputError("timestamp", "working memory lives from now on: give it no timestamp")
        store = self.store(kind)
        item = self.parts.new_item(content, kind, importance, meta, when)
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
        timestamps: Sequence[datetime | str] | None = None,
        split_long: bool = False,
    ) -> list[UUID]:
        """Add many memories of one long-term type in one transaction (the batch API);
        ``timestamps``, one per memory, say when each event happened (now by default). A content
        over the cap refuses the batch, naming its index; with ``split_long`` it becomes several
        memories in a row instead (at most ``splits.MAX_PARTS``, each with ``part`` and ``parts``
        in its metadata), and the ids returned are the parts'."""
        cap = self.config.max_content_chars
        limit = cap * splits.MAX_PARTS if split_long else cap
        kind, batch = check_batch(memory_type, contents, importance, metadata, limit)
        times = check_timestamps(timestamps, len(batch), self.clock())
        if split_long:
            batch, times = splits.split_long(batch, times, cap)
        store = self.store(kind)
        assert not isinstance(store, WorkingMemory)
        return store.add_many(
            [
                self.parts.new_item(text, kind, value, meta, when)
                for (text, value, meta), when in zip(batch, times, strict=True)
            ]
        )

    @retry_transient
    def update_memory(
        self,
        memory_id: UUID | str,
        content: str | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
        *,
        valid_from: datetime | str | None = None,
        correction: bool = False,
    ) -> bool:
        """Change a memory's content, importance or metadata (merged). False if not found.

        A new content of a long-term memory keeps the old one as an earlier version
        (:meth:`memory_history`): by default the world changed now (the old fact held until
        then), or at ``valid_from``; with ``correction`` the old content was never true, and
        only what the store believed changes.
        """
        content, importance, meta = check_update(content, importance, metadata, self.config.max_content_chars)
        since = None if valid_from is None else check_timestamp(valid_from, "valid_from")
        if correction and since is not None:
            raise InvalidInputError("valid_from", "a correction keeps the memory's time: not both")
        uid = ids.as_uuid(memory_id)
        with self.transaction() as conn:
            found = ids.locate(conn, self.working, uid)
        if found is None:
            return False
        if found == "working":
            return self.working.update(uid, content, importance, meta)
        change = Change(since, correction, "correction" if correction else "update")
        return self.parts.long_term(found).update(uid, content, importance, meta, change=change)

    def memory_history(self, memory_id: UUID | str) -> list[MemoryVersion]:
        """Every version of a long-term memory, oldest recorded first, the memory itself among
        them; [] for an unknown id."""
        with self.transaction() as conn:
            return versions.history(conn, self.user_id, ids.as_uuid(memory_id))

    @retry_transient
    def remove_memory(self, memory_id: UUID | str) -> bool:
        """Delete one memory of this user for good. False if not found."""
        uid = ids.as_uuid(memory_id)
        if self.working.remove(uid):
            return True
        with self.transaction() as conn:
            earlier = [row[0] for row in conn.execute(q.VERSION_IDS, {"user_id": self.user_id, "ids": [uid]})]
            self.graph.unlink(conn, [uid, *earlier])
            return conn.execute(q.DELETE, {"user_id": self.user_id, "id": uid}).rowcount >= 1

    @retry_transient
    def forget_memories(
        self,
        strategy: str = "importance_based",
        threshold: float = 0.1,
        max_age_days: float = 30,
        confirm: bool = False,
    ) -> int:
        """Forget across the enabled types; return how many were forgotten.

        A forget that spares nothing (``importance_based`` with ``threshold`` 1, ``time_based``
        with ``max_age_days`` 0) needs ``confirm=True``. Forgotten long-term memories come back
        with :meth:`restore_memories` until ``maintain`` purges them.
        """
        kind, floor, days = (
            check_strategy(strategy),
            check_importance(threshold, "threshold"),
            check_days(max_age_days),
        )
        sweeping = (kind == "importance_based" and floor >= 1.0) or (kind == "time_based" and days == 0)
        if sweeping and confirm is not True:
            raise InvalidInputError(
                "confirm",
                "must be true for a forget that would remove every memory "
                f"({kind} with {'threshold 1' if kind == 'importance_based' else 'max_age_days 0'})",
            )
        return sum(self.store(t).forget(kind, floor, days) for t in self.enabled_types)

    @retry_transient
    def restore_memories(
        self, memory_ids: Sequence[UUID | str] | None = None, since: datetime | None = None
    ) -> int:
        """Bring forgotten long-term memories back (those named, or all forgotten since ``since``,
        or all); return how many. ``maintain`` purges forgotten memories after its retention."""
        named = None if memory_ids is None else [ids.as_uuid(m) for m in memory_ids]
        types = [t for t in self.enabled_types if t != "working"]
        with self.transaction() as conn:
            params = {"user_id": self.user_id, "types": types, "ids": named, "since": since}
            return conn.execute(q.RESTORE, params).rowcount

    @retry_transient
    def consolidate_memories(
        self, from_type: str = "working", to_type: str = "episodic", importance_threshold: float = 0.7
    ) -> int:
        """Move memories at or above the threshold to a longer-lived type; return how many."""
        source, target = consolidate.check_direction(from_type, to_type)
        threshold = check_importance(importance_threshold, "importance_threshold")
        source_store, target_store = self.store(source), self.store(target)
        assert isinstance(target_store, LongTermMemory)
        if isinstance(source_store, WorkingMemory):
            return consolidate.from_working(source_store, target_store, threshold, self.clock())
        return consolidate.between_long_term(source_store, target_store, threshold, self.clock())

    @retry_transient
    def clear_all(self) -> int:
        """Delete every memory of this user (all types, all sessions, their graph); others untouched."""
        with self.transaction() as conn:
            self.graph.clear(conn)
            conn.execute(q.CLEAR_ACCESSES, {"user_id": self.user_id})
            long_term = conn.execute(q.CLEAR_USER, {"user_id": self.user_id}).rowcount
            return long_term + self.working.clear_user(conn)

    clear_all_memories = clear_all

    # ------------------------------------------------------------------ reading

    def get_memory(self, memory_id: UUID | str) -> MemoryItem | None:
        with self.transaction() as conn:
            return ids.get(conn, self.working, ids.as_uuid(memory_id))

    def find_by_metadata(self, key: str, value: str) -> list[UUID]:
        """Ids of this user's live long-term memories whose ``metadata[key]`` equals ``value``."""
        with self.transaction() as conn:
            return ids.find_by_metadata(conn, self.user_id, key, value)

    def has_memory(self, memory_id: UUID | str) -> bool:
        try:
            uid = ids.as_uuid(memory_id)
        except InvalidInputError:
            return False
        with self.transaction() as conn:
            return ids.locate(conn, self.working, uid) is not None

    def important_memories(self, limit: int = 10, min_importance: float = 0.5) -> list[MemoryItem]:
        """The most important live memories of the enabled types."""
        limit = check_limit(limit, self.config.max_search_limit)
        return summary.important(self.parts, self.enabled_types, limit, min_importance)

    def get_memory_stats(self) -> MemoryStats:
        return summary.stats(self.parts, {kind: self.store(kind).stats() for kind in self.enabled_types})

    def resolve_id(self, text: str) -> UUID:
        """A full id, or an unambiguous prefix of at least 8 characters among this user's memories."""
        with self.transaction() as conn:
            return ids.resolve(conn, self.working, text)

    def __repr__(self) -> str:
        return f"MemoryManager(user={self.user_id!r}, types={self.enabled_types})"


__all__ = ["MemoryManager"]
