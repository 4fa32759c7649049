"""MemoryManager: one user's memories across types, every operation scoped to that user.

The whole API is this class: each method checks its arguments and calls one function of the
package's private modules. Differences from the reference, on purpose: searches across types are
merged by relevance score (the reference sorts by importance alone); ``min_importance`` and
``time_range`` are honoured by every type; consolidation is atomic and caps importance at 1.0;
``clear_all`` clears this user only; ids are resolved among this user's memories only.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any
from uuid import UUID

from hello_pgmem import embedding_queue
from hello_pgmem.core.checks import check_flag
from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import (
    LONG_TERM_TYPES,
    MAX_SESSION_MEMORIES,
    MEMORY_TYPES,
    MemoryConfig,
    MemoryItem,
    MemoryStats,
    MemoryType,
    SessionInfo,
    check_content,
    check_importance,
    check_limit,
    check_memory_type,
    check_session_id,
    check_timestamp,
    check_update,
    check_user_id,
    utcnow,
)
from hello_pgmem.core.results import Results
from hello_pgmem.core.retry import retry_transient
from hello_pgmem.core.settings import Settings
from hello_pgmem.db import Conn, Database, SharesDatabase
from hello_pgmem.embedding import Embedder
from hello_pgmem.graph.extracted import Extraction, Extractor
from hello_pgmem.memory import _adding, _changes, _consolidate, _ids, _sessions, _summary
from hello_pgmem.memory import _search as search_module
from hello_pgmem.memory._graph_reads import GraphReads
from hello_pgmem.memory._in_transaction import InTransaction
from hello_pgmem.memory._items import ItemStore
from hello_pgmem.memory._lookups import Lookups
from hello_pgmem.memory._parts import MemoryParts, Store
from hello_pgmem.memory._search_request import MemorySearch
from hello_pgmem.memory._search_sql import SearchSQL
from hello_pgmem.memory._sessions import SessionHit
from hello_pgmem.memory._versions import Change
from hello_pgmem.perceptual.encoders import MediaEncoder

Search = MemorySearch | str


class MemoryManager(Lookups, GraphReads, SharesDatabase):
    """The memories of one user: add, search, update, remove, forget, consolidate, stats.

    It holds a share of the process's pool: ``close()`` (or ``with``) gives it back."""

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
        self.session_id = check_session_id(session_id)
        self.clock = clock or utcnow
        flags = (enable_working, enable_episodic, enable_semantic, enable_perceptual)
        self.enabled_types: list[MemoryType] = [t for t, on in zip(MEMORY_TYPES, flags, strict=True) if on]
        self._parts = MemoryParts(
            self.db,
            self.settings,
            self.config,
            self.user_id,
            session_id=self.session_id,
            clock=self.clock,
            embedder=embedder,
            extractor=extractor,
            encoders=encoders,
        )

    @classmethod
    def of_types(cls, user_id: str, types: Collection[str], **options: Any) -> MemoryManager:
        """A manager of ``user_id`` with exactly the memory types named in ``types``."""
        if isinstance(types, str) or not types:
            raise InvalidInputError("types", f"must be a list of memory types from {', '.join(MEMORY_TYPES)}")
        for kind in types:
            check_memory_type(kind, "types")
        on = [kind in types for kind in MEMORY_TYPES]
        return cls(options.pop("config", None), user_id, *on, **options)

    @property
    def embedder(self) -> Embedder:
        """The text embedder (made from the settings unless one was given)."""
        return self._parts.embedder

    @property
    def registered_embedder(self) -> Embedder:
        """The text embedder, its model registered with the database (indexes and all), once."""
        return self._parts.registered_embedder

    @property
    def items(self) -> ItemStore:
        """This user's memories as the key-value items of a LangGraph store."""
        return ItemStore(self._parts)

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
        *,
        session_id: str | None = None,
    ) -> UUID:
        """Store a memory and return its id.

        Without ``importance`` the documented heuristic estimates it; with ``auto_classify`` the
        type comes from ``metadata["type"]`` or the reference's keyword lists. A semantic memory's
        entities and relations are extracted, unless ``extraction`` gives them. ``timestamp`` is
        when the event happened (long-term types; now by default); ``session_id`` its session
        (this manager's by default).
        """
        return _adding.add_one(
            self._parts, self.enabled_types, content, memory_type, importance, metadata,
            check_flag(auto_classify, "auto_classify"), extraction, timestamp, session_id,
        )  # fmt: skip

    @retry_transient
    def add_memories(
        self,
        contents: Sequence[str],
        memory_type: str = "episodic",
        importance: float | Sequence[float] | None = None,
        metadata: Sequence[dict[str, Any]] | None = None,
        timestamps: Sequence[datetime | str] | None = None,
        split_long: bool = False,
        *,
        session_ids: Sequence[str | None] | None = None,
    ) -> list[UUID]:
        """Add many memories of one long-term type in one transaction (the batch API); ``timestamps``
        and ``session_ids``, one per memory, say when each event happened (now by default) and in
        which session (this manager's by default). A content over the cap refuses the batch, naming
        its index; with ``split_long`` it becomes several memories in a row instead (at most
        ``MAX_PARTS``, each with ``part`` and ``parts`` in its metadata), and the ids returned are
        the parts'."""
        return _adding.add_batch(
            self._parts, self.enabled_types, contents, memory_type, importance, metadata, timestamps,
            check_flag(split_long, "split_long"), session_ids,
        )  # fmt: skip

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
        (:meth:`memory_history`): by default the world changed now (the old fact held until then),
        or at ``valid_from``; with ``correction`` the old content was never true, and only what the
        store believed changes.
        """
        since = None if valid_from is None else check_timestamp(valid_from, "valid_from")
        check_flag(correction, "correction")
        content, importance, meta = check_update(content, importance, metadata, self.config.max_content_chars)
        if correction and since is not None:
            raise InvalidInputError("valid_from", "a correction keeps the memory's time: not both")
        change = Change(since, correction, "correction" if correction else "update")
        return _changes.update(self._parts, _ids.as_uuid(memory_id), content, importance, meta, change)

    @retry_transient
    def remove_memory(self, memory_id: UUID | str) -> bool:
        """Delete one memory of this user for good (its earlier versions too). False if not found."""
        return _changes.remove(self._parts, _ids.as_uuid(memory_id))

    @retry_transient
    def forget_memories(
        self,
        strategy: str = "importance_based",
        threshold: float = 0.1,
        max_age_days: float = 30,
        confirm: bool = False,
    ) -> int:
        """Forget across the enabled types; return how many were forgotten.

        A forget that spares nothing (``importance_based`` with ``threshold`` 1, ``time_based`` with
        ``max_age_days`` 0) needs ``confirm=True``. Forgotten long-term memories come back with
        :meth:`restore_memories` until ``maintain`` purges them.
        """
        stores = [self._store(t) for t in self.enabled_types]
        return _changes.forget(stores, strategy, threshold, max_age_days, check_flag(confirm, "confirm"))

    @retry_transient
    def restore_memories(
        self, memory_ids: Sequence[UUID | str] | None = None, since: datetime | None = None
    ) -> int:
        """Bring forgotten long-term memories back (those named, or all forgotten since ``since``, or
        all); return how many. ``maintain`` purges forgotten memories after its retention."""
        named = None if memory_ids is None else [_ids.as_uuid(m) for m in memory_ids]
        types = [t for t in self.enabled_types if t != "working"]
        after = None if since is None else check_timestamp(since, "since")
        return _changes.restore(self._parts, types, named, after)

    @retry_transient
    def consolidate_memories(
        self, from_type: str = "working", to_type: str = "episodic", importance_threshold: float = 0.7
    ) -> int:
        """Move memories at or above the threshold to a longer-lived type; return how many."""
        source, target = _consolidate.check_direction(from_type, to_type)
        threshold = check_importance(importance_threshold, "importance_threshold")
        return _consolidate.consolidate(self._store(source), self._store(target), threshold, self.clock())

    @retry_transient
    def clear_all(self) -> int:
        """Delete every memory of this user (all types, all sessions, their graph); others untouched."""
        return _changes.clear_user(self._parts)

    # ------------------------------------------------------------------ reading

    def list_memories(
        self, memory_type: str, limit: int = 1000, min_importance: float = 0.0
    ) -> list[MemoryItem]:
        """The live memories of one enabled type, most important first (working memory: this session's,
        oldest first)."""
        store = self._store(check_memory_type(memory_type))
        limit = check_limit(limit, 10_000)
        return store.all() if memory_type == "working" else store.all(limit, check_importance(min_importance))  # type: ignore[call-arg]

    def important_memories(self, limit: int = 10, min_importance: float = 0.5) -> list[MemoryItem]:
        """The most important live memories of the enabled types."""
        limit = check_limit(limit, self.config.max_search_limit)
        return _summary.important(self._parts, self.enabled_types, limit, min_importance)

    def get_memory_stats(self) -> MemoryStats:
        return _summary.stats(self._parts, {kind: self._store(kind).stats() for kind in self.enabled_types})

    def session_memories(self, session_id: str, limit: int = 1000) -> list[MemoryItem]:
        """A session's episodes in time order (what resuming a conversation needs)."""
        session = check_session_id(session_id) or ""
        return self._parts.episodic.session_episodes(session, check_limit(limit, MAX_SESSION_MEMORIES))

    def sessions(self, limit: int = 100) -> list[SessionInfo]:
        """The user's sessions with episodes, most recent first."""
        return self._parts.episodic.sessions(check_limit(limit, 10_000))

    # ------------------------------------------------------------------ searching

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
        session_id: str | None = None,
    ) -> Results[MemoryItem]:
        """Search the enabled types, merged by relevance score (then importance), best first (with
        what waits or was left out: :class:`Results`); :class:`MemorySearch` says what each argument means."""
        request = MemorySearch(
            query, memory_types, limit, min_importance, time_range, per_type_limit, target_modality,
            query_modality, scoring, valid_at, known_at, session_id,
        )  # fmt: skip
        return self.search(request, track_access=track_access)

    @retry_transient
    def search(self, request: MemorySearch, *, track_access: bool = True) -> Results[MemoryItem]:
        """The memories ``request`` finds, best first; with ``track_access`` each long-term one's
        access is logged."""
        tracked = check_flag(track_access, "track_access")
        return search_module.run_search(self._parts, self._checked(request), tracked)

    def search_sql(self, request: Search) -> SearchSQL:
        """The SQL and parameters a search sends for its long-term part, not run (``.literal(conn)``
        renders it for psql). Working memory is ranked in Python."""
        return search_module.sent_statement(self._parts, self._checked(request))

    def search_explained(self, request: Search) -> tuple[list[MemoryItem], SearchSQL | None]:
        """The long-term part of a search (no access logged) and the one statement it sent; no
        statement for the reference's scoring, which ranks each type by a statement of its own."""
        if isinstance(request, str):
            request = MemorySearch(request, [k for k in self.enabled_types if k in LONG_TERM_TYPES])
        return search_module.explained(self._parts, self._checked(request))

    def retrieve_sessions(
        self,
        query: str,
        limit: int = 3,
        *,
        memory_types: Sequence[str] | None = None,
        candidates: int = 50,
        max_memories: int = 100,
    ) -> list[SessionHit]:
        """The ``limit`` sessions that best match ``query`` as whole documents, each with its hits
        among the ``candidates`` best memories and its memories in order (``max_memories``)."""
        text = check_content(query, self.config.max_content_chars, "query")
        limit = check_limit(limit, self.config.max_search_limit)
        per_session = check_limit(max_memories, MAX_SESSION_MEMORIES, "max_memories")
        kinds = [k for k in (memory_types or self.enabled_types) if k in LONG_TERM_TYPES]
        request = MemorySearch(
            text, kinds, check_limit(candidates, self.config.max_search_limit, "candidates")
        )
        pool = _sessions.ranked_sessions(self._parts, text, max(limit, _sessions.SESSION_POOL))
        found = self.search(request, track_access=False)
        best = _sessions.fused(pool, found, limit)
        return _sessions.whole_sessions(self._parts, best, found, kinds, per_session)

    def wait_for_embeddings(
        self, timeout: float | None = None, progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Embed this user's queued memories here until none waits
        (:func:`embedding_queue.wait_for_embeddings`)."""
        scope: list[embedding_queue.Scope] = [("memory", self.user_id)]
        return embedding_queue.wait_for_embeddings(
            self.db, self.registered_embedder, scope, timeout=timeout, progress=progress
        )

    def record_access(self, memory_ids: Sequence[UUID]) -> None:
        """Count one access (and its time) for each memory, in one statement."""
        search_module.record_access(self._parts, memory_ids)

    def in_transaction(self, conn: Conn) -> InTransaction:
        """This user's memory inside ``conn``'s transaction (from :meth:`transaction`): the nearest
        memories, refreshes, inserts and revisions with known vectors, the graph's entities and
        conflicts, decay; as the memory loop composes a turn."""
        return InTransaction(self._parts, conn)

    # ------------------------------------------------------------------ internal

    def _store(self, memory_type: str) -> Store:
        """The object holding ``memory_type``, which must be enabled."""
        return self._parts.of_enabled(memory_type, self.enabled_types)

    def _checked(self, request: Search) -> MemorySearch:
        return (MemorySearch(request) if isinstance(request, str) else request).checked(
            self.config, self.enabled_types
        )

    def __repr__(self) -> str:
        return f"MemoryManager(user={self.user_id!r}, types={self.enabled_types})"
