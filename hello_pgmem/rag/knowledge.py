"""KnowledgeBase: one namespace of documents: ingest, search (with MQE and HyDE), ask, manage.

Ingest: convert to Markdown, chunk by headings, embed through the cache, and store the document
and its chunks in one transaction per document. Re-adding a document id replaces its chunks
atomically; unchanged content (same hash and chunking) is skipped without embedding anything.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from psycopg import Connection
from psycopg.types.json import Jsonb

from hello_pgmem.db import Database
from hello_pgmem.embedding import Embedder
from hello_pgmem.errors import HelloPgmemError, LLMError, ValidationError
from hello_pgmem.llm import ChatClient
from hello_pgmem.models import check_content
from hello_pgmem.rag import store
from hello_pgmem.rag.answer import ANSWER_SYSTEM, ANSWER_USER, Answer, Source, build_context, cited_numbers
from hello_pgmem.rag.chunking import Chunk, chunk_markdown
from hello_pgmem.rag.convert import SUPPORTED, convert_file
from hello_pgmem.rag.expansion import hypothetical_answer, multi_queries
from hello_pgmem.rag.models import ChunkHit, DocumentInfo, IngestResult, KnowledgeStats
from hello_pgmem.retrieval_log import log_retrieval
from hello_pgmem.retry import retry_transient
from hello_pgmem.text import token_counter

log = logging.getLogger(__name__)

MAX_CHUNKS_PER_DOCUMENT = 20_000
MAX_BATCH_DOCUMENTS = 10_000
MAX_TEXT_CHARS = 5_000_000
MAX_TOP_K = 100
MAX_LISTED = 10_000
DEFAULT_FUSION = "rrf"
_MARKUP = [
    (re.compile(r"^#{1,6}\s*", re.M), ""),
    (re.compile(r"\[([^\]]*)\]\([^)]*\)"), r"\1"),
    (re.compile(r"[*_]{1,3}([^*_\n]+)[*_]{1,3}"), r"\1"),
    (re.compile(r"`{1,3}"), ""),
    (re.compile(r"[ \t]+"), " "),
]

Progress = Callable[[int, int, IngestResult], None]


@dataclass(frozen=True)
class TextDocument:
    """One Markdown text to ingest with :meth:`KnowledgeBase.add_texts`."""

    text: str
    document_id: str | None = None
    source_path: str | None = None
    title: str | None = None
    metadata: dict[str, Any] | None = None


def embedding_text(chunk: Chunk) -> str:
    """What is embedded for a chunk: its heading path, then its text without Markdown markup."""
    text = chunk.content
    for pattern, replacement in _MARKUP:
        text = pattern.sub(replacement, text)
    heading = " > ".join(chunk.heading_path)
    return f"{heading}\n{text.strip()}" if heading else text.strip()


def check_name(value: object, field: str) -> str:
    """A namespace or document id: non-empty text of at most 255 characters, no control characters."""
    name = check_content(value, 255, field)
    if any(ord(ch) < 32 for ch in name):
        raise ValidationError(field, "must not contain control characters")
    return name


def check_namespace(namespace: object) -> str:
    return check_name(namespace, "namespace")


def check_document_id(document_id: object) -> str:
    return check_name(document_id, "document_id")


class KnowledgeBase:
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
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.namespace = check_namespace(namespace)
        self.llm = llm
        self.batch_size = batch_size
        self.fusion = fusion

    def _transaction(self, pipeline: bool = False) -> AbstractContextManager[Connection[Any]]:
        """A transaction scoped to this namespace (row-level security)."""
        return self.db.transaction(pipeline=pipeline, namespace=self.namespace)

    def _params(self, **extra: Any) -> dict[str, Any]:
        return {"namespace": self.namespace, **extra}

    # ------------------------------------------------------------------ ingest

    def add_text(
        self,
        text: str,
        document_id: str | None = None,
        *,
        chunk_size: int = 800,
        chunk_overlap: int = 100,
        source_path: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> IngestResult:
        """Store ``text`` (Markdown) as a document; see the module docstring for re-adds."""
        document = TextDocument(text, document_id, source_path, title, metadata)
        return self.add_texts([document], chunk_size=chunk_size, chunk_overlap=chunk_overlap)[0]

    @retry_transient
    def add_texts(
        self, documents: Sequence[TextDocument], *, chunk_size: int = 800, chunk_overlap: int = 100
    ) -> list[IngestResult]:
        """Store many Markdown documents in one transaction, all or nothing (the bulk ingest path).

        Every document is validated and chunked before anything is written; the chunks of all of
        them are embedded through the cache together and written in one pipelined transaction.
        """
        if not documents or len(documents) > MAX_BATCH_DOCUMENTS:
            raise ValidationError("documents", f"must hold between 1 and {MAX_BATCH_DOCUMENTS} documents")
        started = time.perf_counter()
        chunking = {
            "chunk_size": chunk_size,
            "chunk_overlap": chunk_overlap,
            "model": self.embedder.model_name,
        }
        counter = token_counter()
        planned: list[tuple[TextDocument, str, list[Chunk], bytes]] = []  # document, id, chunks, hash
        for doc in documents:
            text = check_content(doc.text, MAX_TEXT_CHARS)
            document_id = check_document_id(doc.document_id or f"text_{store.sha256(text).hex()[:16]}")
            chunks = chunk_markdown(text, chunk_size, chunk_overlap, counter)
            if len(chunks) > MAX_CHUNKS_PER_DOCUMENT:
                raise ValidationError(
                    "text", f"gives {len(chunks)} chunks, more than {MAX_CHUNKS_PER_DOCUMENT}"
                )
            planned.append((doc, document_id, chunks, store.sha256(text)))
        if len({p[1] for p in planned}) != len(planned):
            raise ValidationError("documents", "must not repeat a document id")
        with self._transaction() as conn:
            known = {
                row[0]: (bytes(row[1]), row[2])
                for row in conn.execute(store.DOCUMENT_HASHES, self._params(ids=[p[1] for p in planned]))
            }
        changed = [p for p in planned if known.get(p[1]) != (p[3], chunking)]
        texts = [embedding_text(c) for p in changed for c in p[2]]
        vectors, embedded = store.embed_cached(self.db, self.embedder, texts, self.batch_size)
        vector_rows, fresh = iter(vectors), iter(embedded)
        document_rows: list[dict[str, Any]] = []
        chunk_rows: list[dict[str, Any]] = []
        embedded_by_id: dict[str, int] = {}
        for doc, document_id, chunks, content_hash in changed:
            document_rows.append(
                self._params(
                    id=document_id,
                    source_path=doc.source_path,
                    title=doc.title,
                    content_hash=content_hash,
                    token_count=sum(c.tokens for c in chunks),
                    chunk_count=len(chunks),
                    metadata=Jsonb({**(doc.metadata or {}), "chunking": chunking}),
                )
            )
            chunk_rows.extend(self._chunk_row(document_id, chunk, next(vector_rows)) for chunk in chunks)
            embedded_by_id[document_id] = sum(next(fresh) for _ in chunks)
        if changed:
            with self._transaction(pipeline=True) as conn, conn.cursor() as cur:
                cur.executemany(store.UPSERT_DOCUMENT, document_rows)
                cur.executemany(store.DELETE_CHUNKS, [self._params(id=p[1]) for p in changed])
                cur.executemany(store.INSERT_CHUNK, chunk_rows)
        elapsed = _ms(started)
        updated = {p[1] for p in changed}
        return [
            IngestResult(
                document_id=document_id,
                source_path=doc.source_path,
                status="unchanged"
                if document_id not in updated
                else "replaced"
                if document_id in known
                else "added",
                chunks=len(chunks),
                tokens=sum(c.tokens for c in chunks) if document_id in updated else 0,
                embedded=embedded_by_id.get(document_id, 0),
                elapsed_ms=elapsed,
            )
            for doc, document_id, chunks, _ in planned
        ]

    def _chunk_row(self, document_id: str, chunk: Chunk, vector: np.ndarray) -> dict[str, Any]:
        digest = store.sha256(chunk.content)
        return self._params(
            id=uuid.uuid5(
                uuid.NAMESPACE_URL, f"pgmem:{self.namespace}/{document_id}/{chunk.position}/{digest.hex()}"
            ),
            document_id=document_id,
            position=chunk.position,
            content=chunk.content,
            content_hash=digest,
            heading_path=chunk.heading_path,
            start_char=chunk.start,
            end_char=chunk.end,
            token_count=chunk.tokens,
            embedding=vector,
            model=self.embedder.model_name,
        )

    def add_document(
        self,
        file_path: str | Path,
        document_id: str | None = None,
        *,
        chunk_size: int = 800,
        chunk_overlap: int = 100,
    ) -> IngestResult:
        """Convert a file to Markdown and store it (document id: the given one, else the file path)."""
        converted = convert_file(file_path, **self._vision())
        return self.add_text(
            converted.markdown,
            document_id or check_document_id(converted.source_path[-255:]),
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            source_path=converted.source_path,
            title=converted.title,
            metadata={"format": converted.format},
        )

    def _vision(self) -> dict[str, Any]:
        """MarkItDown describes images with the chat model when one is configured."""
        if self.llm is None:
            return {}
        return {"llm_client": self.llm.client, "llm_model": self.llm.model}

    def ingest(
        self,
        paths: Iterable[str | Path],
        *,
        chunk_size: int = 800,
        chunk_overlap: int = 100,
        progress: Progress | None = None,
    ) -> list[IngestResult]:
        """Files and folders (recursively, supported formats only); one bad file stops nothing."""
        files = list(_expand(paths))
        results: list[IngestResult] = []
        for number, path in enumerate(files, 1):
            try:
                result = self.add_document(path, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
            except HelloPgmemError as exc:
                result = IngestResult(
                    document_id=str(path), source_path=str(path), status="failed", error=str(exc)
                )
            results.append(result)
            if progress is not None:
                progress(number, len(files), result)
        return results

    # ------------------------------------------------------------------ search

    def search(
        self,
        query: str,
        top_k: int = 5,
        *,
        min_score: float | None = None,
        document_ids: Sequence[str] | None = None,
        enable_mqe: bool = False,
        enable_hyde: bool = False,
        mqe_expansions: int = 2,
        candidate_pool_multiplier: int = 4,
    ) -> list[ChunkHit]:
        """Hybrid search; with MQE/HyDE every query variant is searched and the best score per
        chunk kept. ``min_score`` applies to the cosine similarity (``vector_score``)."""
        check_content(query)
        started = time.perf_counter()
        if not 1 <= top_k <= MAX_TOP_K:
            raise ValidationError("top_k", f"must be between 1 and {MAX_TOP_K}")
        variants: list[tuple[str, str]] = [("original", query)]
        if (enable_mqe or enable_hyde) and self.llm is None:
            log.info("no chat model configured: MQE/HyDE skipped, plain search")
        elif self.llm is not None:
            if enable_mqe:
                variants += [("mqe", q) for q in multi_queries(self.llm, query, mqe_expansions)]
            if enable_hyde:
                passage = hypothetical_answer(self.llm, query)
                if passage:
                    variants.append(("hyde", passage))
        vectors = self.embedder.encode([text for _, text in variants])
        self.db.ensure_embedding_model(self.embedder.model_name, self.embedder.dimension)
        pool = top_k * candidate_pool_multiplier
        best: dict[uuid.UUID, ChunkHit] = {}
        with self._transaction() as conn:
            for (kind, text), vector in zip(variants, vectors, strict=True):
                rows = conn.execute(
                    store.SEARCH,
                    self._params(
                        model=self.embedder.model_name,
                        query=vector,
                        text=query if kind == "hyde" else text,
                        limit=pool,
                        document_ids=list(document_ids) if document_ids else None,
                        fusion=self.fusion,
                        pool=pool,
                    ),
                ).fetchall()
                for row in rows:
                    hit = _hit(row)
                    known = best.get(hit.id)
                    if known is None or hit.score > known.score:
                        hit.matched_by = sorted({kind, *(known.matched_by if known else [])})
                        best[hit.id] = hit
                    else:
                        known.matched_by = sorted({kind, *known.matched_by})
        hits = sorted(best.values(), key=lambda h: (-h.score, -h.vector_score, str(h.id)))
        if min_score is not None:
            hits = [h for h in hits if h.vector_score >= min_score]
        hits = hits[:top_k]
        log_retrieval(
            self.db,
            f"rag:{self.namespace}",
            "rag",
            query,
            [(h.id, h.score) for h in hits],
            _ms(started),
            self.namespace,
        )
        return hits

    def ask(
        self,
        question: str,
        top_k: int = 5,
        *,
        max_chars: int = 1200,
        enable_mqe: bool = False,
        enable_hyde: bool = False,
        min_score: float | None = None,
    ) -> Answer:
        """Answer from the knowledge base only, citing passages as [n]; without a chat model, the
        passages themselves with a notice."""
        hits = self.search(
            question, top_k, min_score=min_score, enable_mqe=enable_mqe, enable_hyde=enable_hyde
        )
        context, used = build_context(hits, max_chars)
        sources = [
            Source(
                number=i,
                document_id=h.document_id,
                source_path=h.source_path,
                heading_path=h.heading_path,
                score=h.vector_score,
            )
            for i, h in enumerate(used, 1)
        ]
        if not used:
            return Answer(
                question=question, answer=None, sources=[], context="", notice="知识库中没有找到相关内容"
            )
        if self.llm is None:
            return Answer(
                question=question,
                answer=None,
                sources=sources,
                context=context,
                notice="未配置大语言模型（LLM_MODEL_ID）：以下是最相关的原文片段，而不是生成的回答",
            )
        messages = [
            {"role": "system", "content": ANSWER_SYSTEM},
            {"role": "user", "content": ANSWER_USER.format(question=question, context=context)},
        ]
        try:
            text = self.llm.complete(messages)
        except LLMError as exc:
            log.warning("answering failed, returning the passages: %s", exc)
            return Answer(
                question=question,
                answer=None,
                sources=sources,
                context=context,
                notice=f"大语言模型调用失败（{exc}）：以下是最相关的原文片段",
            )
        cited = cited_numbers(text)
        for source in sources:
            source.cited = source.number in cited
        return Answer(question=question, answer=text, sources=sources, context=context)

    # ------------------------------------------------------------------ manage

    def list_documents(self, limit: int = 100) -> list[DocumentInfo]:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LISTED:
            raise ValidationError("limit", f"must be an integer between 1 and {MAX_LISTED}")
        with self._transaction() as conn:
            rows = conn.execute(store.LIST_DOCUMENTS, self._params(limit=limit)).fetchall()
        return [
            DocumentInfo(
                id=r[0], source_path=r[1], title=r[2], chunks=r[3], tokens=r[4], updated_at=r[6].isoformat()
            )
            for r in rows
        ]

    @retry_transient
    def remove_document(self, document_id: str) -> bool:
        with self._transaction() as conn:
            return (
                conn.execute(store.DELETE_DOCUMENT, self._params(id=check_document_id(document_id))).rowcount
                == 1
            )

    @retry_transient
    def clear(self) -> int:
        """Delete every document (and chunk) of this namespace only; return how many documents."""
        with self._transaction() as conn:
            return conn.execute(store.CLEAR_NAMESPACE, self._params()).rowcount

    def stats(self) -> KnowledgeStats:
        with self._transaction() as conn:
            row = conn.execute(store.STATS, self._params()).fetchone()
        assert row is not None
        return KnowledgeStats(
            namespace=self.namespace,
            documents=row[0],
            chunks=row[1],
            tokens=int(row[2]),
            last_ingest=row[3].isoformat() if row[3] else None,
            embedding_model=self.embedder.model_name,
            dimension=self.embedder.dimension,
        )


def _hit(row: Sequence[Any]) -> ChunkHit:
    return ChunkHit(
        id=row[0],
        document_id=row[1],
        position=row[2],
        content=row[3],
        heading_path=list(row[4]),
        start_char=row[5],
        end_char=row[6],
        source_path=row[7],
        vector_score=float(row[8]),
        text_score=float(row[9]),
        score=float(row[10]),
    )


def _expand(paths: Iterable[str | Path]) -> Iterable[Path]:
    for item in paths:
        path = Path(item).expanduser()
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED)
        else:
            yield path


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
