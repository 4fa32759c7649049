"""Consolidation: moving important memories to a longer-lived type, atomically.

A moved memory keeps its id and timestamp, its importance is multiplied by 1.1 (capped at 1.0),
and its metadata records where it came from. Each move is one SQL statement: the row leaves the
source and enters the target together, or not at all.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from hello_pgmem.db import Database
from hello_pgmem.embedding import Embedder
from hello_pgmem.models import MemoryType

WORKING_CANDIDATES = """
SELECT id, content FROM working_memories
WHERE user_id = %(user_id)s AND session_id IS NOT DISTINCT FROM %(session_id)s
  AND expires_at > %(now)s AND importance >= %(threshold)s
ORDER BY created_at, id
"""

# The content must still be what was embedded: a row changed meanwhile stays for next time.
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
RETURNING id
"""

BETWEEN_LONG_TERM = """
UPDATE memories
SET memory_type = %(to_type)s,
    importance = least(1.0, importance * 1.1),
    metadata = metadata || %(provenance)s::jsonb,
    updated_at = now()
WHERE user_id = %(user_id)s AND memory_type = %(from_type)s AND forgotten_at IS NULL
  AND importance >= %(threshold)s
RETURNING id
"""


def _provenance(from_type: MemoryType, now: datetime) -> Jsonb:
    return Jsonb({"consolidated_from": from_type, "consolidated_at": now.isoformat()})


def from_working(
    db: Database,
    embedder: Embedder,
    user_id: str,
    session_id: str | None,
    to_type: MemoryType,
    threshold: float,
    now: datetime,
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
        return len(conn.execute(FROM_WORKING, params).fetchall())


def between_long_term(
    db: Database,
    user_id: str,
    from_type: MemoryType,
    to_type: MemoryType,
    threshold: float,
    now: datetime,
) -> int:
    """Change the type of the long-term memories at or above ``threshold``; same id and vector."""
    params = {
        "user_id": user_id,
        "from_type": from_type,
        "to_type": to_type,
        "threshold": threshold,
        "provenance": _provenance(from_type, now),
    }
    with db.transaction(user_id) as conn:
        return len(conn.execute(BETWEEN_LONG_TERM, params).fetchall())
