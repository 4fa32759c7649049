"""KnowledgeBase: one namespace of documents: ingest, search (with MQE and HyDE), ask, manage.

Ingest (:mod:`~hello_pgmem.rag.ingest`): convert to Markdown, chunk by headings, and store the
documents and their chunks in one transaction per call, searchable by their words at once; their
vectors come from the embedding cache, the write itself or the embedding workers
(``PGMEM_EMBED``). Search and ask (:mod:`~hello_pgmem.rag.search`): hybrid search in SQL, query
expansion, cited answers.
"""

from __future__ import annotations

from collections.abc import Callable

from hello_pgmem import embedding_queue
from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.i18n import Language
from hello_pgmem.core.models import check_name, check_user_id
from hello_pgmem.core.retry import retry_transient
from hello_pgmem.db import Database
from hello_pgmem.embedding import Embedder
from hello_pgmem.llm import ChatClient
from hello_pgmem.rag import store
from hello_pgmem.rag.ingest import (
    MAX_BATCH_DOCUMENTS,
    MAX_CHUNKS_PER_DOCUMENT,
    Ingest,
    TextDocument,
)
from hello_pgmem.rag.models import DocumentInfo, KnowledgeStats
from hello_pgmem.rag.search import DEFAULT_FUSION, MAX_TOP_K, Search
from hello_pgmem.rag.unpacking import MAX_TEXT_CHARS

MAX_LISTED = 10_000

__all__ = [
    "MAX_BATCH_DOCUMENTS",
    "MAX_CHUNKS_PER_DOCUMENT",
    "MAX_TEXT_CHARS",
    "MAX_TOP_K",
    "KnowledgeBase",
    "TextDocument",
]


class KnowledgeBase(Ingest, Search):
    """The documents of one namespace."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        namespace: str = "default",
        *,
        llm: ChatClient | None = None,
        batch_size: int = 64,
        fusion: str = DEFAULT_FUSION,
        asked_by: str | None = None,
        language: Language | None = None,
    ) -> None:
        """``asked_by`` is the user whose questions these are: the retrieval log files them under
        that user (so that erasing the user erases them), else under ``rag:<namespace>``.
        ``language`` words the notices and the chat model's instructions (default:
        ``PGMEM_LANGUAGE`` of the database's settings)."""
        self.db = db
        self.asked_by = None if asked_by is None else check_user_id(asked_by)
        self.embedder = embedder
        self.namespace = check_name(namespace, "namespace")
        self.llm = llm
        self.batch_size = batch_size
        self.fusion = fusion
        self.language: Language = language or db.settings.language
        self.embeds_now = embedding_queue.embeds_in_write(db, embedder)
        """Whether ingest embeds the chunks itself, or stores them at once and queues them for the
        embedding workers (``PGMEM_EMBED``)."""

    def wait_for_embeddings(
        self, timeout: float | None = None, progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Embed this namespace's queued chunks in the calling thread (waiting for those other
        workers hold) until none waits; how many it embedded. ``progress(done, left)`` after
        each part (the namespace's rows embedded since the wait began, whoever made them, and those
        left); past ``timeout`` seconds an EmbeddingError says how many still wait and why."""
        scope: list[embedding_queue.Scope] = [("chunk", self.namespace)]
        return embedding_queue.wait_for_embeddings(
            self.db, self.registered_embedder(), scope, timeout=timeout, progress=progress
        )

    def list_documents(self, limit: int = 100) -> list[DocumentInfo]:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LISTED:
            raise InvalidInputError("limit", f"must be an integer between 1 and {MAX_LISTED}")
        with self.transaction() as conn:
            rows = conn.execute(store.LIST_DOCUMENTS, self.params(limit=limit)).fetchall()
        return [
            DocumentInfo(
                id=r[0], source_path=r[1], title=r[2], chunks=r[3], tokens=r[4], updated_at=r[6].isoformat()
            )
            for r in rows
        ]

    @retry_transient
    def remove_document(self, document_id: str) -> bool:
        params = self.params(id=check_name(document_id, "document_id"))
        with self.transaction() as conn:
            return conn.execute(store.DELETE_DOCUMENT, params).rowcount == 1

    @retry_transient
    def clear(self) -> int:
        """Delete every document and chunk of this namespace only, and the cached embeddings of
        its chunks; return how many documents."""
        with self.transaction() as conn:
            return store.erase_namespace(conn, self.namespace)["documents"]

    def stats(self) -> KnowledgeStats:
        with self.transaction() as conn:
            row = conn.execute(store.STATS, self.params()).fetchone()
            waiting = embedding_queue.pending_in(conn, "chunk", self.namespace, self.embedder.model_name)
        assert row is not None
        return KnowledgeStats(
            namespace=self.namespace,
            documents=row[0],
            chunks=row[1],
            tokens=int(row[2]),
            last_ingest=row[3].isoformat() if row[3] else None,
            embedding_model=self.embedder.model_name,
            dimension=self.embedder.dimension,
            pending_embeddings=waiting.rows,
        )
