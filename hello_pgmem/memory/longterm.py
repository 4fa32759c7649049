"""Long-term memories (episodic, semantic, perceptual): the ``memories`` table, one user at a time.

Every statement names the user in its ``WHERE`` clause; a row, its vector and its metadata are
written in one statement of one transaction, so there is never half a memory. Forgetting is a
soft delete (``forgotten_at``): forgotten memories never come back from a search, and the
maintenance job purges them after a retention period.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal
from uuid import UUID

import numpy as np
from psycopg.types.json import Jsonb

from hello_pgmem.db import Database
from hello_pgmem.embedding import Embedder
from hello_pgmem.errors import ValidationError
from hello_pgmem.models import MemoryItem, MemoryType, TypeStats, utcnow

ForgetStrategy = Literal["importance_based", "time_based", "capacity_based"]
FORGET_STRATEGIES: tuple[ForgetStrategy, ...] = ("importance_based", "time_based", "capacity_based")

COLUMNS = "id, memory_type, content, importance, session_id, modality, metadata, created_at"

INSERT = """
INSERT INTO memories (user_id, id, memory_type, content, importance, session_id, modality,
                      metadata, created_at, embedding, embedding_model)
VALUES (%(user_id)s, %(id)s, %(memory_type)s, %(content)s, %(importance)s, %(session_id)s,
        %(modality)s, %(metadata)s, %(created_at)s, %(embedding)s, %(model)s)
"""

SELECT_ONE = f"""
SELECT {COLUMNS} FROM memories
WHERE user_id = %(user_id)s AND id = %(id)s AND forgotten_at IS NULL
"""

UPDATE = """
UPDATE memories
SET content = coalesce(%(content)s::text, content),
    importance = coalesce(%(importance)s::double precision, importance),
    metadata = metadata || %(metadata)s::jsonb,
    embedding = coalesce(%(embedding)s::vector, embedding),
    embedding_model = coalesce(%(model)s::text, embedding_model),
    updated_at = now()
WHERE user_id = %(user_id)s AND id = %(id)s AND forgotten_at IS NULL
RETURNING memory_type
"""

DELETE = "DELETE FROM memories WHERE user_id = %(user_id)s AND id = %(id)s RETURNING memory_type"

FORGET_IMPORTANCE = """
UPDATE memories SET forgotten_at = %(now)s
WHERE user_id = %(user_id)s AND memory_type = %(memory_type)s AND forgotten_at IS NULL
  AND importance < %(threshold)s
"""

FORGET_TIME = """
UPDATE memories SET forgotten_at = %(now)s
WHERE user_id = %(user_id)s AND memory_type = %(memory_type)s AND forgotten_at IS NULL
  AND created_at < %(cutoff)s
"""

FORGET_CAPACITY = """
UPDATE memories m SET forgotten_at = %(now)s
FROM (SELECT id, row_number() OVER (ORDER BY importance DESC, created_at DESC, id) AS rank
      FROM memories
      WHERE user_id = %(user_id)s AND memory_type = %(memory_type)s AND forgotten_at IS NULL) r
WHERE m.user_id = %(user_id)s AND m.id = r.id AND r.rank > %(capacity)s
"""

STATS = """
SELECT count(*) FILTER (WHERE forgotten_at IS NULL),
       count(*) FILTER (WHERE forgotten_at IS NOT NULL),
       coalesce(avg(importance) FILTER (WHERE forgotten_at IS NULL), 0),
       count(DISTINCT session_id) FILTER (WHERE forgotten_at IS NULL),
       min(created_at) FILTER (WHERE forgotten_at IS NULL),
       max(created_at) FILTER (WHERE forgotten_at IS NULL)
FROM memories WHERE user_id = %(user_id)s AND memory_type = %(memory_type)s
"""

LIST = f"""
SELECT {COLUMNS} FROM memories
WHERE user_id = %(user_id)s AND memory_type = %(memory_type)s AND forgotten_at IS NULL
  AND importance >= %(min_importance)s
ORDER BY importance DESC, created_at DESC, id
LIMIT %(limit)s
"""

CLEAR = "DELETE FROM memories WHERE user_id = %(user_id)s AND memory_type = %(memory_type)s"

KEYWORD = f"""
SELECT {COLUMNS}, 0.5::double precision AS vector_score, r.recency,
       importance_weight(importance),
       CASE WHEN memory_type = 'semantic' THEN semantic_score(0.5, 0, importance)
            ELSE episodic_score(0.5, r.recency, importance) END AS score
FROM memories
CROSS JOIN LATERAL (SELECT episodic_recency(
    greatest(0, extract(epoch FROM %(now)s::timestamptz - created_at)::float8 / 86400)) AS recency) r
WHERE user_id = %(user_id)s AND memory_type = %(memory_type)s AND forgotten_at IS NULL
  AND (search_text @@ fts_query(%(query)s) OR strpos(lower(content), lower(%(query)s)) > 0)
  AND (%(session_id)s::text IS NULL OR session_id = %(session_id)s)
  AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR created_at <= %(until)s)
  AND (%(min_importance)s::double precision IS NULL OR importance >= %(min_importance)s)
ORDER BY score DESC, id
LIMIT %(limit)s
"""


def row_to_item(user_id: str, row: Sequence[Any], scores: dict[str, Any] | None = None) -> MemoryItem:
    """A ``COLUMNS`` row as a MemoryItem; session, modality and scores go to metadata."""
    memory_id, memory_type, content, importance, session_id, modality, metadata, created_at = row[:8]
    meta = dict(metadata or {})
    if session_id is not None:
        meta["session_id"] = session_id
    if modality is not None:
        meta["modality"] = modality
    if scores:
        meta.update(scores)
    return MemoryItem.model_construct(
        id=memory_id,
        content=content,
        memory_type=memory_type,
        user_id=user_id,
        timestamp=created_at,
        importance=float(importance),
        metadata=meta,
    )


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
        candidate_multiplier: int = 5,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.user_id = user_id
        self.clock = clock
        self.max_capacity = max_capacity
        self.candidate_multiplier = candidate_multiplier

    # ------------------------------------------------------------------ writing

    def _row(self, item: MemoryItem, vector: np.ndarray) -> dict[str, Any]:
        metadata = dict(item.metadata)
        session_id = metadata.pop("session_id", None)
        modality = metadata.pop("modality", None)
        return {
            "user_id": self.user_id,
            "id": item.id,
            "memory_type": self.memory_type,
            "content": item.content,
            "importance": item.importance,
            "session_id": None if session_id is None else str(session_id),
            "modality": modality,
            "metadata": Jsonb(metadata),
            "created_at": item.timestamp,
            "embedding": vector,
            "model": self.embedder.model_name,
        }

    def add(self, item: MemoryItem) -> UUID:
        """Store one memory and its embedding in one transaction."""
        return self.add_many([item])[0]

    def add_many(self, items: Sequence[MemoryItem], prepared: Sequence[Any] | None = None) -> list[UUID]:
        """Store memories and their embeddings in one transaction (embedded in one batch).

        ``prepared`` replaces :meth:`_prepare` (e.g. an extraction the caller already has).
        """
        if not items:
            return []
        for item in items:
            if item.user_id != self.user_id:
                raise ValidationError("user_id", f"must be {self.user_id!r}, the owner of this memory")
        vectors = self.embedder.encode([item.content for item in items])
        self.db.ensure_embedding_model(self.embedder.model_name, self.embedder.dimension)
        rows = [self._row(item, vector) for item, vector in zip(items, vectors, strict=True)]
        if prepared is None:
            prepared = self._prepare([item.content for item in items])
        with self.db.transaction(self.user_id, pipeline=True) as conn:
            with conn.cursor() as cur:
                cur.executemany(INSERT, rows)
            self._after_write(conn, [item.id for item in items], prepared, new=True)
        return [item.id for item in items]

    def _prepare(self, contents: Sequence[str]) -> list[Any]:
        """Work done before the transaction for each new or changed content (e.g. extraction)."""
        return [None] * len(contents)

    def _after_write(self, conn: Any, memory_ids: Sequence[UUID], prepared: Sequence[Any], new: bool) -> None:
        """Writes that belong in the same transaction as the memory rows (e.g. the graph)."""

    def update(
        self,
        memory_id: UUID,
        content: str | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> bool:
        """Change content (re-embedded), importance, or merge metadata. False if not found."""
        vector = None if content is None else self.embedder.encode_one(content)
        if vector is not None:
            self.db.ensure_embedding_model(self.embedder.model_name, self.embedder.dimension)
        params = {
            "user_id": self.user_id,
            "id": memory_id,
            "content": content,
            "importance": importance,
            "metadata": Jsonb(metadata or {}),
            "embedding": vector,
            "model": None if vector is None else self.embedder.model_name,
        }
        prepared = None if content is None else self._prepare([content])
        with self.db.transaction(self.user_id) as conn:
            row = conn.execute(UPDATE, params).fetchone()
            if row is not None and prepared is not None and row[0] == self.memory_type:
                self._after_write(conn, [memory_id], prepared, new=False)
            return row is not None

    def forget(self, strategy: ForgetStrategy, threshold: float = 0.1, max_age_days: float = 30) -> int:
        """Forget (soft-delete) by importance, age or capacity; return how many."""
        now = self.clock()
        params: dict[str, Any] = {
            "user_id": self.user_id,
            "memory_type": self.memory_type,
            "now": now,
        }
        if strategy == "importance_based":
            query, params["threshold"] = FORGET_IMPORTANCE, threshold
        elif strategy == "time_based":
            query, params["cutoff"] = FORGET_TIME, now - timedelta(days=max_age_days)
        elif strategy == "capacity_based":
            query, params["capacity"] = FORGET_CAPACITY, self.max_capacity
        else:
            raise ValidationError("strategy", f"must be one of {', '.join(FORGET_STRATEGIES)}")
        with self.db.transaction(self.user_id) as conn:
            return conn.execute(query, params).rowcount

    def clear(self) -> int:
        with self.db.transaction(self.user_id) as conn:
            return conn.execute(CLEAR, {"user_id": self.user_id, "memory_type": self.memory_type}).rowcount

    # ------------------------------------------------------------------ reading

    def stats(self) -> TypeStats:
        with self.db.transaction(self.user_id) as conn:
            row = conn.execute(STATS, {"user_id": self.user_id, "memory_type": self.memory_type}).fetchone()
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
            rows = conn.execute(LIST, params).fetchall()
        return [row_to_item(self.user_id, row) for row in rows]

    def keyword_search(
        self,
        query: str,
        limit: int,
        *,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        min_importance: float | None = None,
    ) -> list[MemoryItem]:
        """The reference's fallback: substring or full-text matches, vector score fixed at 0.5."""
        params = {
            "user_id": self.user_id,
            "memory_type": self.memory_type,
            "query": query,
            "now": self.clock(),
            "session_id": session_id,
            "since": since,
            "until": until,
            "min_importance": min_importance,
            "limit": limit,
        }
        with self.db.transaction(self.user_id) as conn:
            rows = conn.execute(KEYWORD, params).fetchall()
        return [self._scored(row, ("vector_score", "recency_score")) for row in rows]

    def _ranked(self, search_sql: str, query: str, names: Sequence[str], **params: Any) -> list[MemoryItem]:
        """Run a ranked search statement with the query's vector; rows become scored items."""
        self.db.ensure_embedding_model(self.embedder.model_name, self.embedder.dimension)
        params.update(
            user_id=self.user_id,
            model=self.embedder.model_name,
            query=self.embedder.encode_one(query),
            pool=params["limit"] * self.candidate_multiplier,
            now=self.clock(),
        )
        with self.db.transaction(self.user_id) as conn:
            rows = conn.execute(search_sql, params).fetchall()
        return [self._scored(row, names) for row in rows]

    def _scored(self, row: Sequence[Any], names: Sequence[str]) -> MemoryItem:
        """A row of ``COLUMNS`` + named components + importance weight + score."""
        components = dict(zip(names, (float(v) for v in row[8 : 8 + len(names)]), strict=True))
        components["importance_weight"] = float(row[8 + len(names)])
        components["relevance_score"] = float(row[9 + len(names)])
        return row_to_item(self.user_id, row, components)
