"""Every statement on documents, chunks and the embedding cache: the RAG family's owner."""

from __future__ import annotations

import hashlib
from contextlib import AbstractContextManager
from typing import Any

from hello_pgmem.db import Conn, Database
from hello_pgmem.embedding import Embedder
from hello_pgmem.embedding_queue.cache import cache_key
from hello_pgmem.embedding_queue.texts import chunk_embedding_text

DOCUMENT_HASHES = """
SELECT id, content_hash, metadata->'chunking', chunk_count FROM documents
WHERE namespace = %(namespace)s AND id = ANY(%(ids)s)
"""
# A file already ingested from the same bytes with the same chunking needs no conversion.
DOCUMENT_FILE = """
SELECT metadata->>'file_sha256', metadata->'chunking', chunk_count, source_path, metadata->>'file'
FROM documents WHERE namespace = %(namespace)s AND id = %(id)s
"""
UPSERT_DOCUMENT = """
INSERT INTO documents (namespace, id, source_path, title, content_hash, token_count, chunk_count, metadata)
VALUES (%(namespace)s, %(id)s, %(source_path)s, %(title)s, %(content_hash)s, %(token_count)s,
        %(chunk_count)s, %(metadata)s)
ON CONFLICT (namespace, id) DO UPDATE
SET source_path = EXCLUDED.source_path, title = EXCLUDED.title, content_hash = EXCLUDED.content_hash,
    token_count = EXCLUDED.token_count, chunk_count = EXCLUDED.chunk_count,
    metadata = EXCLUDED.metadata, updated_at = EXCLUDED.updated_at
"""
DELETE_CHUNKS = "DELETE FROM chunks WHERE namespace = %(namespace)s AND document_id = %(id)s"
INSERT_CHUNKS = """
INSERT INTO chunks (namespace, id, document_id, position, content, content_hash, heading_path,
                    start_char, end_char, token_count, embedding, embedding_model)
SELECT %(namespace)s, r.id, r.document_id, r.position, r.content, r.content_hash,
       ARRAY(SELECT h.name FROM jsonb_array_elements_text(r.heading_path) WITH ORDINALITY AS h(name, n)
             ORDER BY h.n),
       r.start_char, r.end_char,
       r.token_count, r.embedding, r.model
FROM unnest(%(id)s::uuid[], %(document_id)s::text[], %(position)s::int[], %(content)s::text[],
            %(content_hash)s::bytea[], %(heading_path)s::jsonb[], %(start_char)s::int[],
            %(end_char)s::int[], %(token_count)s::int[], %(embedding)b::vector[], %(model)s::text[])
     WITH ORDINALITY AS r(id, document_id, position, content, content_hash, heading_path, start_char,
                          end_char, token_count, embedding, model, ordinal)
ORDER BY r.ordinal
"""
"""The chunks of one namespace in one statement (``Database.insert_rows``; heading paths come as JSON)."""
INSERT_CHUNK = """
INSERT INTO chunks (namespace, id, document_id, position, content, content_hash, heading_path,
                    start_char, end_char, token_count, embedding, embedding_model)
VALUES (%(namespace)s, %(id)s, %(document_id)s, %(position)s, %(content)s, %(content_hash)s,
        %(heading_path)s::text[], %(start_char)s, %(end_char)s, %(token_count)s, %(embedding)s, %(model)s)
"""
"""One chunk (``Database.insert_rows``: a single chunk, and every chunk on Citus)."""
CHUNK_COLUMNS = (
    "id",
    "document_id",
    "position",
    "content",
    "content_hash",
    "heading_path",
    "start_char",
    "end_char",
    "token_count",
    "embedding",
    "model",
)

_SEARCH_CALL = """search_chunks(
    %(namespace)s, %(model)s, %(query)s, %(text)s, %(limit)s, %(document_ids)s, %(fusion)s, %(pool)s)"""

SEARCH_COLUMNS = (
    "id",
    "document_id",
    "position",
    "content",
    "heading_path",
    "start_char",
    "end_char",
    "source_path",
    "vector_score",
    "text_score",
    "score",
)
"""The columns of ``SEARCH`` (and the fields of a record of ``SEARCH_DELEGATED``), in order."""

SEARCH = f"""
SELECT {", ".join(SEARCH_COLUMNS)}
FROM {_SEARCH_CALL}
"""

SEARCH_DELEGATED = f"SELECT {_SEARCH_CALL}"
"""``SEARCH`` as Citus delegates it to the worker that holds the namespace (``Database.call_rows``)."""

LIST_DOCUMENTS = """
SELECT id, source_path, title, chunk_count, token_count, created_at, updated_at
FROM documents WHERE namespace = %(namespace)s ORDER BY updated_at DESC, id LIMIT %(limit)s
"""
DELETE_DOCUMENT = "DELETE FROM documents WHERE namespace = %(namespace)s AND id = %(id)s"
CLEAR_NAMESPACE = "DELETE FROM documents WHERE namespace = %(namespace)s"
# An erase locks the namespace's chunks in id order before it reads their texts: a worker's store
# of their vectors (and of its cache entries) is then either committed and its cache entries
# forgotten with the rest, or waits and finds the chunks gone.
NAMESPACE_CHUNKS = (
    "SELECT content, heading_path FROM chunks WHERE namespace = %(namespace)s ORDER BY id FOR UPDATE"
)
CACHE_FORGET = "DELETE FROM embedding_cache WHERE content_hash = ANY(%(hashes)s)"
HOLDS_DOCUMENTS = "SELECT EXISTS (SELECT 1 FROM documents WHERE namespace = %(namespace)s)"
STATS = """
SELECT (SELECT count(*) FROM documents WHERE namespace = %(namespace)s),
       (SELECT count(*) FROM chunks WHERE namespace = %(namespace)s),
       (SELECT coalesce(sum(token_count), 0) FROM chunks WHERE namespace = %(namespace)s),
       (SELECT max(updated_at) FROM documents WHERE namespace = %(namespace)s)
"""


class Namespaced:
    """What works on one namespace: its database and name, and transactions scoped to it."""

    db: Database
    embedder: Embedder
    namespace: str

    def registered_embedder(self) -> Embedder:
        """The embedder, its model registered with the database (once per database)."""
        self.db.ensure_embedding_model(self.embedder.model_name, self.embedder.dimension)
        return self.embedder

    def transaction(self, pipeline: bool = False) -> AbstractContextManager[Conn]:
        """A transaction scoped to this namespace (row-level security)."""
        return self.db.transaction(pipeline=pipeline, namespace=self.namespace)

    def params(self, **extra: Any) -> dict[str, Any]:
        """Statement parameters with this namespace."""
        return {"namespace": self.namespace, **extra}


def erase_namespace(conn: Conn, namespace: str) -> dict[str, int]:
    """Delete every document and chunk of ``namespace`` and the cached embeddings of its chunks'
    texts, in the caller's transaction (scoped to the namespace); rows per table."""
    chunks = conn.execute(NAMESPACE_CHUNKS, {"namespace": namespace}).fetchall()
    hashes = list(
        {cache_key(namespace, chunk_embedding_text(content, heading)) for content, heading in chunks}
    )
    cached = conn.execute(CACHE_FORGET, {"hashes": hashes}).rowcount if hashes else 0
    documents = conn.execute(CLEAR_NAMESPACE, {"namespace": namespace}).rowcount
    return {"documents": documents, "chunks": len(chunks), "embedding_cache": cached}


def sha256(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()
