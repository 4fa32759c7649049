"""Move long-term memories to another text embedding model, in batches, resumably.

Each batch is read, embedded outside any transaction, and written in one short transaction that
only touches rows whose content is still what was embedded. Rows already on the target model are
never read again, so an interrupted run simply continues where it stopped. Two vector columns
hold text vectors: ``embedding`` (every memory except image, audio and video ones, whose
``embedding`` is in their media encoder's space and is left alone) and ``text_embedding`` (the
description of every perceptual memory).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from psycopg import sql

from hello_pgmem.db import Database
from hello_pgmem.embedding import Embedder
from hello_pgmem.memory import _reembed_queries as eq

log = logging.getLogger(__name__)


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

    ``progress(done, remaining)`` is called after each batch; ``max_batches`` stops early (the
    next call continues).
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    db.ensure_embedding_model(embedder.model_name, embedder.dimension)
    params: dict[str, object] = {"model": embedder.model_name, "user_id": user_id, "batch": batch_size}
    done = batches = 0
    for column in eq.VECTOR_COLUMNS:
        statements = eq.reembed_statements(column)
        while max_batches is None or batches < max_batches:
            moved = _batch(db, embedder, user_id, params, *statements)
            if moved is None:
                break
            done += moved[0]
            batches += 1
            if progress is not None:
                progress(done, moved[1])
    log.info("re-embedded %d memories with %s", done, embedder.model_name)
    return done


def _batch(
    db: Database,
    embedder: Embedder,
    user_id: str | None,
    params: dict[str, object],
    pending: sql.Composed,
    write: sql.Composed,
    remaining: sql.Composed,
) -> tuple[int, int] | None:
    """One batch: (rows written, rows still pending), or None when nothing is pending."""
    with db.transaction(user_id) as conn:
        rows = conn.execute(pending, params).fetchall()
    if not rows:
        return None
    vectors = embedder.encode_documents([row[2] for row in rows])
    values = {
        "model": embedder.model_name,
        "users": [row[0] for row in rows],
        "ids": [row[1] for row in rows],
        "contents": [row[2] for row in rows],
        "embeddings": list(vectors),
    }
    with db.transaction(user_id) as conn:
        written = conn.execute(write, values).rowcount
        left = conn.execute(remaining, params).fetchone()
    return written, int(left[0]) if left else 0
