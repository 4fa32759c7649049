"""The embedding cache: vectors by model and a namespace's text (``embedding_cache``), so that a
text embedded once for a namespace is never sent to the model again for it. Keys hash the
namespace with the text: a namespace can neither find nor time another namespace's entries."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from hello_pgmem.core.deadline import check_deadline
from hello_pgmem.db import Conn, Database
from hello_pgmem.embedding import Embedder

CACHE_LOOKUP = """
SELECT content_hash, embedding FROM embedding_cache
WHERE model = %(model)s AND content_hash = ANY(%(hashes)s)
"""
CACHE_STORE = """
INSERT INTO embedding_cache (model, content_hash, embedding)
SELECT %(model)s, h, e FROM unnest(%(content_hash)s::bytea[], %(embedding)b::vector[]) AS x(h, e)
ON CONFLICT DO NOTHING
"""
CACHE_STORE_ONE = """
INSERT INTO embedding_cache (model, content_hash, embedding)
VALUES (%(model)s, %(content_hash)s, %(embedding)s)
ON CONFLICT DO NOTHING
"""
CACHE_COLUMNS = ("content_hash", "embedding")
"""The embedding cache's writes (``Database.insert_rows``)."""


def cache_key(namespace: str, text: str) -> bytes:
    """The cache key of a text embedded for ``namespace``: the SHA-256 of both, so that a
    namespace can neither find nor time another namespace's entries (no shared hits)."""
    return hashlib.sha256(namespace.encode("utf-8") + b"\x00" + text.encode("utf-8")).digest()


def cache_vectors(
    db: Database, conn: Conn, model: str, keys: Sequence[bytes], vectors: Sequence[Any]
) -> None:
    """Cache ``vectors`` under their keys (:func:`cache_key`), in the caller's transaction."""
    rows = [{"content_hash": key, "embedding": vector} for key, vector in zip(keys, vectors, strict=True)]
    db.insert_rows(conn, CACHE_STORE_ONE, CACHE_STORE, rows, CACHE_COLUMNS, model=model)


def _lookup(db: Database, model: str, hashes: Sequence[bytes]) -> dict[bytes, Any]:
    """The cached vectors of ``hashes`` (keys of :func:`cache_key`) that are there, by key."""
    with db.connection() as conn:
        return dict(conn.execute(CACHE_LOOKUP, {"model": model, "hashes": list(set(hashes))}).fetchall())


def cached_vectors(db: Database, model: str, texts: Sequence[str], *, namespace: str) -> list[Any]:
    """Each text's vector from ``namespace``'s part of the embedding cache, or None."""
    if not texts:
        return []
    hashes = [cache_key(namespace, text) for text in texts]
    found = _lookup(db, model, hashes)
    return [found.get(digest) for digest in hashes]


def embed_cached(
    db: Database,
    embedder: Embedder,
    texts: Sequence[str],
    batch_size: int = 64,
    *,
    namespace: str,
    keep: bool = True,
) -> tuple[np.ndarray, list[bool]]:
    """Vectors for ``texts`` from ``namespace``'s part of the cache by (model, key), the rest
    embedded in batches (the embedder's model must be registered) and cached, unless not ``keep``
    (a worker caches what it stores, with its store: :func:`cache_vectors`).

    Returns the vectors and, per text, whether the embedding model had to encode it.
    """
    if not texts:
        return np.zeros((0, embedder.dimension), dtype=np.float32), []
    hashes = [cache_key(namespace, text) for text in texts]
    found = _lookup(db, embedder.model_name, hashes)
    missing: dict[bytes, str] = {}
    for digest, text in zip(hashes, texts, strict=True):
        if digest not in found:
            missing.setdefault(digest, text)
    if missing:
        keys = list(missing)
        vectors: list[np.ndarray] = []
        for start in range(0, len(keys), batch_size):
            check_deadline()
            vectors.extend(embedder.encode_documents([missing[k] for k in keys[start : start + batch_size]]))
        if keep:
            with db.connection() as conn:
                cache_vectors(db, conn, embedder.model_name, keys, vectors)
        found.update(zip(keys, vectors, strict=True))
    vectors_out = [
        np.asarray(found[d].to_numpy() if hasattr(found[d], "to_numpy") else found[d], dtype=np.float32)
        for d in hashes
    ]
    return np.stack(vectors_out), [d in missing for d in hashes]
