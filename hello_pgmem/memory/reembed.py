"""Move long-term memories to another embedding model, in batches, resumably.

Each batch is read, embedded outside any transaction, and written in one short transaction that
only touches rows whose content is still what was embedded. Rows already on the target model are
never read again, so an interrupted run simply continues where it stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from hello_pgmem.db import Database
from hello_pgmem.embedding import Embedder

log = logging.getLogger(__name__)

PENDING = """
SELECT user_id, id, content FROM memories
WHERE embedding_model IS DISTINCT FROM %(model)s
  AND (%(user_id)s::text IS NULL OR user_id = %(user_id)s)
ORDER BY user_id, id
LIMIT %(batch)s
"""

WRITE = """
UPDATE memories m
SET embedding = src.embedding, embedding_model = %(model)s, updated_at = now()
FROM unnest(%(users)s::text[], %(ids)s::uuid[], %(contents)s::text[], %(embeddings)s::vector[])
     AS src(user_id, id, content, embedding)
WHERE m.user_id = src.user_id AND m.id = src.id AND m.content = src.content
"""

REMAINING = """
SELECT count(*) FROM memories
WHERE embedding_model IS DISTINCT FROM %(model)s
  AND (%(user_id)s::text IS NULL OR user_id = %(user_id)s)
"""


def reembed(
    db: Database,
    embedder: Embedder,
    user_id: str | None = None,
    *,
    batch_size: int = 256,
    max_batches: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Re-embed the memories of ``user_id`` (or of everyone) with ``embedder``; return how many.

    ``progress(done, remaining)`` is called after each batch.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    db.ensure_embedding_model(embedder.model_name, embedder.dimension)
    params: dict[str, object] = {
        "model": embedder.model_name,
        "user_id": user_id,
        "batch": batch_size,
    }
    done = batches = 0
    while max_batches is None or batches < max_batches:
        with db.transaction(user_id) as conn:
            rows = conn.execute(PENDING, params).fetchall()
        if not rows:
            break
        vectors = embedder.encode([row[2] for row in rows])
        write = {
            "model": embedder.model_name,
            "users": [row[0] for row in rows],
            "ids": [row[1] for row in rows],
            "contents": [row[2] for row in rows],
            "embeddings": list(vectors),
        }
        with db.transaction(user_id) as conn:
            done += conn.execute(WRITE, write).rowcount
            remaining = conn.execute(REMAINING, params).fetchone()
        batches += 1
        if progress is not None:
            progress(done, int(remaining[0]) if remaining else 0)
    log.info("re-embedded %d memories with %s", done, embedder.model_name)
    return done
