"""Long-term memories (episodic, semantic, perceptual): what is written to the ``memories`` table,
one user at a time (the search is :mod:`._search`'s).

A row, its vector and its metadata are written in one statement of one transaction, so there is
never half a memory; what else belongs to a memory (its knowledge graph) is written by
:meth:`LongTermMemory.write_extras` in the same transaction. Forgetting is a soft delete
(``forgotten_at``): forgotten memories never come back from a search, and the maintenance job
purges them after a retention period. The SQL is in :mod:`hello_pgmem.memory._queries`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import numpy as np
from psycopg.types.json import Jsonb

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import (
    FORGET_STRATEGIES,
    ForgetStrategy,
    MemoryItem,
    MemoryType,
    TypeStats,
    utcnow,
)
from hello_pgmem.db import Conn, Database
from hello_pgmem.embedding import Embedder
from hello_pgmem.memory import _queries as q
from hello_pgmem.memory import _versions as versions
from hello_pgmem.memory._rows import memory_rows
from hello_pgmem.memory._versions import Change


class LongTermMemory:
    """What episodic, semantic and perceptual memory share: storage in ``memories``."""

    memory_type: MemoryType

    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        user_id: str,
        *,
        clock: Callable[[], datetime] = utcnow,
        max_capacity: int = 100,
        embeds_now: bool = True,
        queued: Callable[[], None] | None = None,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.user_id = user_id
        self.clock = clock
        self.max_capacity = max_capacity
        self.embeds_now = embeds_now
        """Whether a write embeds its texts itself, before its transaction; else they are queued
        (sql/embedding_queue.sql) and ``queued`` is called once the write commits."""
        self.queued = queued or (lambda: None)

    # ------------------------------------------------------------------ writing

    def row(self, item: MemoryItem, vector: np.ndarray | None) -> dict[str, Any]:
        """The ``queries.INSERT`` parameters of one memory with its text vector (None: queued)."""
        metadata = dict(item.metadata)
        modality = item.modality or metadata.pop("modality", None)
        return {
            "user_id": self.user_id,
            "id": item.id,
            "memory_type": self.memory_type,
            "content": item.content,
            "importance": item.importance,
            "session_id": item.session_id,
            "modality": modality,
            "metadata": Jsonb(metadata),
            "created_at": item.timestamp,
            "embedding": vector,
            "model": None if vector is None else self.embedder.model_name,
            "text_embedding": None,
            "text_model": None,
        }

    def add(self, item: MemoryItem) -> UUID:
        """Store one memory and its embedding in one transaction."""
        return self.add_many([item])[0]

    def add_many(self, items: Sequence[MemoryItem], prepared: Sequence[Any] | None = None) -> list[UUID]:
        """Store memories in one transaction: embedded in one batch before it, or queued.

        ``prepared`` replaces :meth:`prepare` (e.g. an extraction the caller already has).
        """
        if not items:
            return []
        for item in items:
            if item.user_id != self.user_id:
                raise InvalidInputError("user_id", f"must be {self.user_id!r}, the owner of this memory")
        if prepared is None:
            prepared = self.prepare([item.content for item in items])
        rows = self.rows(items)  # no model is ever called inside the transaction
        with self.transaction(pipeline=True) as conn:
            self.write_rows(conn, rows)
            self.write_extras(conn, [item.id for item in items], prepared, new=True)
        self.written()
        return [item.id for item in items]

    def transaction(self, pipeline: bool = False) -> AbstractContextManager[Conn]:
        """A write transaction of this user, whose rows without a vector are queued for the model."""
        return self.db.transaction(self.user_id, pipeline, embedding_model=self.embedder.model_name)

    def written(self) -> None:
        """After a write committed: its queued rows are the workers' now."""
        if not self.embeds_now:
            self.queued()

    def rows(
        self, items: Sequence[MemoryItem], vectors: Sequence[np.ndarray | None] | None = None
    ) -> list[dict[str, Any]]:
        """The rows of new memories: with ``vectors``, else embedded in one batch (or queued)."""
        if vectors is None:
            texts = [item.content for item in items]
            vectors = list(self.embedder.encode_documents(texts)) if self.embeds_now else [None] * len(items)
        return [self.row(item, vector) for item, vector in zip(items, vectors, strict=True)]

    def insert(self, conn: Conn, rows: Sequence[dict[str, Any]], prepared: Sequence[Any]) -> None:
        """Write new memories' rows and what belongs to them, in the caller's transaction."""
        self.write_rows(conn, rows)
        self.write_extras(conn, [row["id"] for row in rows], prepared, new=True)

    def write_rows(self, conn: Conn, rows: Sequence[dict[str, Any]]) -> None:
        """Write new memories' rows alone, in the caller's transaction."""
        self.db.insert_rows(conn, q.INSERT, q.INSERT_MANY, rows, q.INSERT_COLUMNS, user_id=self.user_id)

    def prepare(self, contents: Sequence[str]) -> list[Any]:
        """Work done before the transaction for each new or changed content (e.g. extraction)."""
        return [None] * len(contents)

    def write_extras(
        self, conn: Conn, memory_ids: Sequence[UUID], prepared: Sequence[Any], new: bool
    ) -> None:
        """Writes that belong in the same transaction as the memory rows (e.g. the graph)."""

    def update(
        self,
        memory_id: UUID,
        content: str | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
        *,
        change: Change | None = None,
    ) -> bool:
        """Change content (re-embedded, or queued; the earlier version kept: ``change``), importance,
        or merge metadata. False if not found."""
        embed = content is not None and self.embeds_now
        vector = self.embedder.encode_documents([content])[0] if embed and content is not None else None
        prepared = None if content is None else self.prepare([content])[0]
        with self.transaction() as conn:
            found = self.update_in(conn, memory_id, content, importance, metadata, vector, prepared, change)
        if content is not None:
            self.written()
        return found

    def update_in(
        self,
        conn: Conn,
        memory_id: UUID,
        content: str | None,
        importance: float | None,
        metadata: dict[str, Any] | None,
        vector: np.ndarray | None,
        prepared: Any = None,
        change: Change | None = None,
    ) -> bool:
        """:meth:`update` in the caller's transaction, with the new content's vector given (None: the
        new content is queued for its vector). A new content keeps the memory as it was as an
        earlier version (:mod:`.versions`)."""
        valid_from = None
        if content is not None:
            change = change or Change()
            until = None if change.correction else change.valid_from or self.clock()
            valid_from = versions.keep_earlier(
                conn, self.user_id, memory_id, until, change.reason, asked=change.valid_from is not None
            )
        params = {
            "user_id": self.user_id,
            "id": memory_id,
            "content": content,
            "importance": importance,
            "metadata": Jsonb(metadata or {}),
            "valid_from": valid_from,
            **self.vectors_for_update(vector),
        }
        row = conn.execute(q.UPDATE if content is None else q.UPDATE_CONTENT, params).fetchone()
        if row is not None and content is not None and row[0] == self.memory_type:
            self.write_extras(conn, [memory_id], [prepared], new=False)
        return row is not None

    def vectors_for_update(self, vector: np.ndarray | None) -> dict[str, Any]:
        """Which vector column a new content's vector replaces (``embedding`` here)."""
        model = None if vector is None else self.embedder.model_name
        return {"embedding": vector, "model": model, "text_embedding": None, "text_model": None}

    def forget(self, strategy: ForgetStrategy, threshold: float = 0.1, max_age_days: float = 30) -> int:
        """Forget (soft-delete) by importance, age or capacity; return how many."""
        now = self.clock()
        params: dict[str, Any] = {"user_id": self.user_id, "memory_type": self.memory_type, "now": now}
        if strategy == "importance_based":
            query, params["threshold"] = q.FORGET_IMPORTANCE, threshold
        elif strategy == "time_based":
            query, params["cutoff"] = q.FORGET_TIME, now - timedelta(days=max_age_days)
        elif strategy == "capacity_based":
            query, params["capacity"] = q.FORGET_CAPACITY, self.max_capacity
        else:
            raise InvalidInputError("strategy", f"must be one of {', '.join(FORGET_STRATEGIES)}")
        with self.db.transaction(self.user_id) as conn:
            return conn.execute(query, params).rowcount

    def clear(self) -> int:
        with self.db.transaction(self.user_id) as conn:
            return conn.execute(
                q.CLEAR_TYPE, {"user_id": self.user_id, "memory_type": self.memory_type}
            ).rowcount

    # ------------------------------------------------------------------ reading

    def stats(self) -> TypeStats:
        with self.db.transaction(self.user_id) as conn:
            row = conn.execute(q.STATS, {"user_id": self.user_id, "memory_type": self.memory_type}).fetchone()
        assert row is not None
        count, forgotten, avg, sessions, oldest, newest = row
        return TypeStats(
            memory_type=self.memory_type,
            count=count,
            forgotten_count=forgotten,
            avg_importance=float(avg),
            sessions_count=sessions,
            oldest=oldest,
            newest=newest,
        )

    def all(self, limit: int = 1000, min_importance: float = 0.0) -> list[MemoryItem]:
        """The user's live memories of this type, most important first."""
        params = {
            "user_id": self.user_id,
            "memory_type": self.memory_type,
            "min_importance": min_importance,
            "limit": limit,
        }
        with self.db.transaction(self.user_id) as conn:
            return conn.cursor(row_factory=memory_rows(self.user_id)).execute(q.LIST, params).fetchall()
