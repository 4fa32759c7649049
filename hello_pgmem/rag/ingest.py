"""Ingest: Markdown texts and files into one namespace, embedded through the cache, in one
transaction per call.

Every document is validated and chunked before anything is written; re-adding a document id
replaces its chunks atomically; unchanged content (same hash and chunking) is skipped without
embedding anything.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from hello_pgmem import embedding_queue
from hello_pgmem.core.deadline import check_deadline
from hello_pgmem.core.errors import HelloPgmemError, InvalidInputError, UnsupportedFormatError
from hello_pgmem.core.models import check_content, check_name
from hello_pgmem.core.retry import retry_transient
from hello_pgmem.core.text import token_counter
from hello_pgmem.embedding import Embedder
from hello_pgmem.embedding_queue.cache import cached_vectors, embed_cached
from hello_pgmem.embedding_queue.texts import chunk_embedding_text
from hello_pgmem.llm import ChatClient
from hello_pgmem.rag import store
from hello_pgmem.rag.chunking import Chunk, check_sizes, chunk_markdown
from hello_pgmem.rag.convert import convert_file, read_document
from hello_pgmem.rag.files import beneath
from hello_pgmem.rag.folders import MAX_BYTES, MAX_FILES, planned_files
from hello_pgmem.rag.models import IngestResult
from hello_pgmem.rag.unpacking import MAX_TEXT_CHARS

MAX_CHUNKS_PER_DOCUMENT = 20_000
MAX_BATCH_DOCUMENTS = 10_000

Progress = Callable[[int, int, IngestResult], None]


@dataclass(frozen=True)
class TextDocument:
    """One Markdown text to ingest with :meth:`KnowledgeBase.add_texts`."""

    text: str
    document_id: str | None = None
    source_path: str | None = None
    title: str | None = None
    metadata: dict[str, Any] | None = None


class Ingest(store.Namespaced):
    """The ingest methods of :class:`~hello_pgmem.rag.knowledge.KnowledgeBase`."""

    embedder: Embedder
    llm: ChatClient | None
    batch_size: int
    embeds_now: bool
    asked_by: str | None

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

        Long because checking, chunking, embedding and the one transaction are steps of one all-or-nothing
        write.
        """
        if not documents or len(documents) > MAX_BATCH_DOCUMENTS:
            raise InvalidInputError("documents", f"must hold between 1 and {MAX_BATCH_DOCUMENTS} documents")
        check_sizes(chunk_size, chunk_overlap)
        started = time.perf_counter()
        chunking = self._chunking(chunk_size, chunk_overlap)
        counter = token_counter()
        named: list[tuple[TextDocument, str, str, bytes]] = []  # document, text, id, hash
        for doc in documents:
            text = check_content(doc.text, MAX_TEXT_CHARS)
            content_hash = store.sha256(text)
            given = doc.document_id
            document_id = check_name(
                f"text_{content_hash.hex()[:16]}" if given is None else given, "document_id"
            )
            named.append((doc, text, document_id, content_hash))
        if len({n[2] for n in named}) != len(named):
            raise InvalidInputError("documents", "must not repeat a document id")
        with self.transaction() as conn:
            known = {
                row[0]: (bytes(row[1]), row[2], row[3])
                for row in conn.execute(store.DOCUMENT_HASHES, self.params(ids=[n[2] for n in named]))
            }
        # The stored hash and chunking decide "unchanged" before any chunking: a re-ingest of an
        # unchanged document costs its hash.
        planned: list[tuple[TextDocument, str, list[Chunk], bytes]] = []  # document, id, chunks, hash
        unchanged_chunks: dict[str, int] = {}
        for doc, text, document_id, content_hash in named:
            stored = known.get(document_id)
            if stored is not None and stored[:2] == (content_hash, chunking):
                unchanged_chunks[document_id] = stored[2]
                planned.append((doc, document_id, [], content_hash))
                continue
            chunks = chunk_markdown(text, chunk_size, chunk_overlap, counter)
            if len(chunks) > MAX_CHUNKS_PER_DOCUMENT:
                raise InvalidInputError(
                    "text", f"gives {len(chunks)} chunks, more than {MAX_CHUNKS_PER_DOCUMENT}"
                )
            planned.append((doc, document_id, chunks, content_hash))
        changed = [p for p in planned if p[1] not in unchanged_chunks]
        texts = [chunk_embedding_text(c.content, c.heading_path) for p in changed for c in p[2]]
        embedder = self.registered_embedder()
        if self.embeds_now:
            made, embedded = embed_cached(self.db, embedder, texts, self.batch_size, namespace=self.namespace)
            vectors: list[Any] = list(made)
        else:  # the cache's vectors now, the rest queued for the workers
            vectors = cached_vectors(self.db, embedder.model_name, texts, namespace=self.namespace)
            embedded = [False] * len(texts)
        vector_rows, fresh = iter(vectors), iter(embedded)
        document_rows: list[dict[str, Any]] = []
        chunk_rows: list[dict[str, Any]] = []
        embedded_by_id: dict[str, int] = {}
        queued_by_id: dict[str, int] = {}
        for doc, document_id, chunks, content_hash in changed:
            document_rows.append(
                self.params(
                    id=document_id,
                    source_path=doc.source_path,
                    title=doc.title,
                    content_hash=content_hash,
                    token_count=sum(c.tokens for c in chunks),
                    chunk_count=len(chunks),
                    metadata=Jsonb({**(doc.metadata or {}), "chunking": chunking}),
                )
            )
            rows = [self._chunk_row(document_id, chunk, next(vector_rows)) for chunk in chunks]
            chunk_rows.extend(rows)
            embedded_by_id[document_id] = sum(next(fresh) for _ in chunks)
            queued_by_id[document_id] = sum(row["embedding"] is None for row in rows)
        if changed:
            with (
                self.db.transaction(
                    pipeline=True, namespace=self.namespace, embedding_model=embedder.model_name
                ) as conn,
                conn.cursor() as cur,
            ):
                cur.executemany(store.UPSERT_DOCUMENT, document_rows)
                cur.executemany(store.DELETE_CHUNKS, [self.params(id=p[1]) for p in changed])
                self.db.insert_rows(
                    conn,
                    store.INSERT_CHUNK,
                    store.INSERT_CHUNKS,
                    chunk_rows,
                    store.CHUNK_COLUMNS,
                    namespace=self.namespace,
                )
            if any(queued_by_id.values()):
                embedding_queue.queued(self.db, embedder)
        elapsed = int((time.perf_counter() - started) * 1000)
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
                chunks=unchanged_chunks.get(document_id, len(chunks)),
                tokens=sum(c.tokens for c in chunks) if document_id in updated else 0,
                embedded=embedded_by_id.get(document_id, 0),
                queued=queued_by_id.get(document_id, 0),
                elapsed_ms=elapsed,
            )
            for doc, document_id, chunks, _ in planned
        ]

    def _chunk_row(self, document_id: str, chunk: Chunk, vector: np.ndarray | None) -> dict[str, Any]:
        digest = store.sha256(chunk.content)
        return self.params(
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
            model=None if vector is None else self.embedder.model_name,
        )

    def add_document(
        self,
        file_path: str | Path,
        document_id: str | None = None,
        *,
        chunk_size: int = 800,
        chunk_overlap: int = 100,
        root: Path | None = None,
    ) -> IngestResult:
        """Convert a file to Markdown and store it (document id: the given one, else the file
        path as given); with ``root``, only a file beneath that folder, reached without following
        links. A document id that holds another file (another folder's ``docs/guide.md``) is an
        error: the file is not stored and the other one stays."""
        check_sizes(chunk_size, chunk_overlap)  # before a conversion that may take long
        started = time.perf_counter()
        path = Path(file_path).expanduser()
        document_id = check_name(str(path)[-255:] if document_id is None else document_id, "document_id")
        data = read_document(path, root)
        file_hash = hashlib.sha256(data).hexdigest()
        origin = str(path.resolve() if root is None else beneath(root, path))
        with self.transaction() as conn:
            stored = conn.execute(store.DOCUMENT_FILE, self.params(id=document_id)).fetchone()
        if stored is not None and stored[4] is not None and stored[4] != origin:
            raise InvalidInputError(
                "document_id",
                f"{document_id!r} of namespace {self.namespace!r} holds another file ({stored[4]}): "
                "ingest this one into another namespace or under a document id of its own, or remove "
                "that document first",
            )
        chunking = self._chunking(chunk_size, chunk_overlap)
        if stored is not None and stored[0] == file_hash and stored[1] == chunking and stored[3] == str(path):
            return IngestResult(  # the same bytes, chunked the same way: no conversion
                document_id=document_id,
                source_path=str(path),
                status="unchanged",
                chunks=stored[2],
                elapsed_ms=int((time.perf_counter() - started) * 1000),
            )
        owner = self.asked_by or f"namespace:{self.namespace}"  # whose turn a conversion takes
        converted = convert_file(path, root=root, data=data, owner=owner, **self._vision())
        return self.add_text(
            converted.markdown,
            document_id,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            source_path=converted.source_path,
            title=converted.title,
            metadata={"format": converted.format, "file_sha256": file_hash, "file": origin},
        )

    def _chunking(self, chunk_size: int, chunk_overlap: int) -> dict[str, Any]:
        """How a document was chunked and embedded, stored with it: the same text chunked the
        same way is unchanged."""
        return {"chunk_size": chunk_size, "chunk_overlap": chunk_overlap, "model": self.embedder.model_name}

    def _vision(self) -> dict[str, Any]:
        """MarkItDown describes images with the chat model when one is configured."""
        if self.llm is None:
            return {}
        return {"llm_client": self.llm.client, "llm_model": self.llm.model}

    def ingest(
        self,
        paths: str | Path | Iterable[str | Path],
        *,
        chunk_size: int = 800,
        chunk_overlap: int = 100,
        progress: Progress | None = None,
        root: Path | None = None,
        max_files: int = MAX_FILES,
        max_bytes: int = MAX_BYTES,
    ) -> list[IngestResult]:
        """Files and folders (one path, or a list of them; recursively, links not followed into
        folders, hidden names not walked); one bad file stops nothing. Every file gets a result: a
        file that is neither text nor a known document format is ``skipped`` with the reason, one
        that cannot be read ``failed``. With ``root``, every file must lie beneath it. The
        filesystem root, system folders and the home folder as a whole are refused, and so are
        more than ``max_files`` files or ``max_bytes`` bytes in all (:mod:`~hello_pgmem.rag.folders`),
        before anything is stored."""
        check_sizes(chunk_size, chunk_overlap)
        files = planned_files(paths, root, max_files=max_files, max_bytes=max_bytes)
        results: list[IngestResult] = []
        for number, path in enumerate(files, 1):
            check_deadline()  # an abandoned call stops between files
            try:
                result = self.add_document(
                    path, chunk_size=chunk_size, chunk_overlap=chunk_overlap, root=root
                )
            except HelloPgmemError as exc:
                status = "skipped" if isinstance(exc, UnsupportedFormatError) else "failed"
                result = IngestResult(
                    document_id=str(path), source_path=str(path), status=status, error=str(exc)
                )
            results.append(result)
            if progress is not None:
                progress(number, len(files), result)
        return results

    # ------------------------------------------------------------------ search
