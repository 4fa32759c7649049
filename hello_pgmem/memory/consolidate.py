"""Consolidation: moving important memories to a longer-lived type, atomically.

A moved memory keeps its id and timestamp, its importance is multiplied by 1.1 (capped at 1.0),
and its metadata records where it came from. The rows to move are read first (their contents are
embedded, and extracted into the graph when the target is semantic), then moved in one
transaction that only takes rows whose content is still what was read: a row changed meanwhile
stays for the next run. Whatever the target needs besides the row (its graph) is written by
``after_move`` in the same transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from hello_pgmem.db import Database
from hello_pgmem.embedding import Embedder
from hello_pgmem.models import MemoryType

AfterMove = Callable[[Any, Sequence[UUID], Sequence[str]], None]

WORKING_CANDIDATES = """
SELECT id, content FROM working_memories
WHERE user_id = %(user_id)s AND session_id IS NOT DISTINCT FROM %(session_id)s
  AND expires_at > %(now)s AND importance >= %(threshold)s
ORDER BY created_at, id
"""

FROM_WORKING = """
WITH moved AS (
    DELETE FROM working_memories w
    USING unnest(%(ids)s::uuid[], %(contents)s::text[], %(embeddings)s::vector[])
          AS src(id, content, embedding)
    WHERE w.user_id = %(user_id)s AND w.id = src.id AND w.content = src.content
      AND w.importance >= %(threshold)s AND w.expires_at > %(now)s
    RETURNING w.id, w.content, w.importance, w.session_id, w.metadata, w.created_at, src.embedding
)
INSERT INTO memories (user_id, id, memory_type, content, importance, session_id, metadata,
                      created_at, embedding, embedding_model)
SELECT %(user_id)s, id, %(to_type)s, content, least(1.0, importance * 1.1), session_id,
       metadata || %(provenance)s::jsonb, created_at, embedding, %(model)s
FROM moved
RETURNING id, content
"""

LONG_TERM_CANDIDATES = """
SELECT id, content FROM memories
WHERE user_id = %(user_id)s AND memory_type = %(from_type)s AND forgotten_at IS NULL
  AND importance >= %(threshold)s
ORDER BY created_at, id
"""

BETWEEN_LONG_TERM = """
UPDATE memories m
SET memory_type = %(to_type)s,
    importance = least(1.0, m.importance * 1.1),
    metadata = m.metadata || %(provenance)s::jsonb,
    updated_at = now()
FROM unnest(%(ids)s::uuid[], %(contents)s::text[]) AS src(id, content)
WHERE m.user_id = %(user_id)s AND m.id = src.id AND m.content = src.content
  AND m.memory_type = %(from_type)s AND m.forgotten_at IS NULL AND m.importance >= %(threshold)s
RETURNING m.id, m.content
"""


def _provenance(from_type: MemoryType, now: datetime) -> Jsonb:
    return Jsonb({"consolidated_from": from_type, "consolidated_at": now.isoformat()})


def _finish(conn: Any, rows: Sequence[Any], after_move: AfterMove | None) -> int:
    if after_move is not None and rows:
        after_move(conn, [row[0] for row in rows], [row[1] for row in rows])
    return len(rows)


def from_working(
    db: Database,
    embedder: Embedder,
    user_id: str,
    session_id: str | None,
    to_type: MemoryType,
    threshold: float,
    now: datetime,
    prepare: Callable[[Sequence[str]], Any] | None = None,
    after_move: Callable[[Any, Sequence[UUID], Sequence[str], Any], None] | None = None,
) -> int:
    """Move the working memories at or above ``threshold`` into long-term ``to_type``."""
    params: dict[str, Any] = {
        "user_id": user_id,
        "session_id": session_id,
        "now": now,
        "threshold": threshold,
    }
    with db.transaction(user_id) as conn:
        candidates = conn.execute(WORKING_CANDIDATES, params).fetchall()
    if not candidates:
        return 0
    contents = [row[1] for row in candidates]
    vectors = embedder.encode(contents)
    prepared = prepare(contents) if prepare else None
    db.ensure_embedding_model(embedder.model_name, embedder.dimension)
    params.update(
        ids=[row[0] for row in candidates],
        contents=contents,
        embeddings=list(vectors),
        to_type=to_type,
        model=embedder.model_name,
        provenance=_provenance("working", now),
    )
    with db.transaction(user_id) as conn:
        rows = conn.execute(FROM_WORKING, params).fetchall()
        return _finish(conn, rows, _bind(after_move, prepared, candidates))


def between_long_term(
    db: Database,
    user_id: str,
    from_type: MemoryType,
    to_type: MemoryType,
    threshold: float,
    now: datetime,
    prepare: Callable[[Sequence[str]], Any] | None = None,
    after_move: Callable[[Any, Sequence[UUID], Sequence[str], Any], None] | None = None,
) -> int:
    """Change the type of the long-term memories at or above ``threshold``; same id and vector."""
    params: dict[str, Any] = {
        "user_id": user_id,
        "from_type": from_type,
        "to_type": to_type,
        "threshold": threshold,
        "provenance": _provenance(from_type, now),
    }
    with db.transaction(user_id) as conn:
        candidates = conn.execute(LONG_TERM_CANDIDATES, params).fetchall()
    if not candidates:
        return 0
    prepared = prepare([row[1] for row in candidates]) if prepare else None
    params.update(ids=[row[0] for row in candidates], contents=[row[1] for row in candidates])
    with db.transaction(user_id) as conn:
        rows = conn.execute(BETWEEN_LONG_TERM, params).fetchall()
        return _finish(conn, rows, _bind(after_move, prepared, candidates))


def _bind(
    after_move: Callable[[Any, Sequence[UUID], Sequence[str], Any], None] | None,
    prepared: Any,
    candidates: Sequence[Any],
) -> AfterMove | None:
    """``after_move`` with each moved row's prepared value (rows may be fewer than candidates)."""
    if after_move is None or prepared is None:
        return None
    by_id = {row[0]: value for row, value in zip(candidates, prepared, strict=True)}

    def call(conn: Any, ids: Sequence[UUID], contents: Sequence[str]) -> None:
        after_move(conn, ids, contents, [by_id[memory_id] for memory_id in ids])

    return call
