"""The synthetic workload (bench/workload.py) in a database: memories bulk-loaded by COPY for many
users, query vectors, and the write paths timed (single and batch adds, RAG ingest)."""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
from psycopg import sql

from bench.harness import percentiles
from bench.workload import Workload
from hello_pgmem import Database, HashingEmbedder, KnowledgeBase, MemoryManager, Settings, TextDocument
from hello_pgmem.dev.trace import count_round_trips
from hello_pgmem.graph.extraction import RuleExtractor


def embed_all(embedder: HashingEmbedder, texts: list[str], batch: int = 4096) -> tuple[np.ndarray, float]:
    started = time.perf_counter()
    parts = [embedder.encode_documents(texts[i : i + batch]) for i in range(0, len(texts), batch)]
    return np.concatenate(parts), time.perf_counter() - started


COPY_ROWS = 50_000
"""Rows a COPY statement loads: each batch commits, so a long load keeps its transactions short."""


def bulk_load(
    db: Database,
    embedder: HashingEmbedder,
    users: dict[str, int],
    memory_type: str = "episodic",
    seed: int = 0,
) -> dict[str, Any]:
    """COPY memories for each user (index dropped during the load, rebuilt and timed after)."""
    db.ensure_embedding_model(embedder.model_name, embedder.dimension)
    with db.connection() as conn:
        index = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE 'memories\\_embedding\\_%%'"
            " AND indexdef LIKE %s",
            (f"%{embedder.model_name}%",),
        ).fetchone()
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(index[0])))
    embed_seconds = copy_seconds = 0.0
    total = 0
    now = dt.datetime.now(dt.UTC)
    for number, (user, count) in enumerate(users.items()):
        work = Workload(seed + number)
        rows = list(work.memories(count))
        vectors, seconds = embed_all(embedder, [r[0] for r in rows])
        embed_seconds += seconds
        started = time.perf_counter()
        for first in range(0, count, COPY_ROWS):
            with db.connection() as conn:
                conn.execute("SET LOCAL statement_timeout = 0")  # its triggers take seconds
                with (
                    conn.cursor() as cur,
                    cur.copy(
                        "COPY memories (user_id, id, memory_type, content, importance, session_id,"
                        " created_at, embedding, embedding_model) FROM STDIN WITH (FORMAT BINARY)"
                    ) as copy,
                ):
                    copy.set_types(
                        ["text", "uuid", "text", "text", "float8", "text", "timestamptz", "vector", "text"]
                    )
                    for i in range(first, min(first + COPY_ROWS, count)):
                        (content, importance), vector = rows[i], vectors[i]
                        session = f"s{i % 50}" if i % 1000 else "rare"  # session 'rare': 1 in 1000
                        copy.write_row(
                            (
                                user,
                                uuid.uuid4(),
                                memory_type,
                                content,
                                importance,
                                session,
                                now - dt.timedelta(minutes=i),
                                vector,
                                embedder.model_name,
                            )
                        )
        copy_seconds += time.perf_counter() - started
        total += count
    started = time.perf_counter()
    with db.connection() as conn:
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute("SET statement_timeout = 0")  # a 1M-row build takes minutes
        conn.execute(index[1])
        conn.execute("ANALYZE memories")
    build_seconds = time.perf_counter() - started
    with db.connection() as conn:
        size = conn.execute(
            "SELECT pg_total_relation_size('memories'), pg_relation_size(%s)", (index[0],)
        ).fetchone()
    return {
        "rows": total,
        "embed_seconds": embed_seconds,
        "copy_seconds": copy_seconds,
        "copy_rows_per_s": total / copy_seconds,
        "index_build_seconds": build_seconds,
        "table_bytes_total": size[0],
        "hnsw_index_bytes": size[1],
        "bytes_per_100k": size[0] / total * 100_000,
    }


def query_vectors(
    embedder: HashingEmbedder, count: int, seed: int, short: bool = False
) -> tuple[list[np.ndarray], float]:
    """Query vectors: held-out memories (the usual ANN methodology), or short template queries,
    which tie with thousands of memories at nearly the same distance (a stress case for recall)."""
    work = Workload(10_000 + seed)
    texts = [work.query() if short else work.memory() for _ in range(count)]
    started = time.perf_counter()
    vectors = list(embedder.encode_documents(texts))
    return vectors, (time.perf_counter() - started) / count * 1000


def measure_adds(
    settings: Settings, embedder: HashingEmbedder, single: int, batch_total: int
) -> dict[str, Any]:
    work = Workload(777)
    results: dict[str, Any] = {}
    one = Settings(**{**settings.model_dump(), "pool_min_size": 1, "pool_max_size": 1})
    with Database(one) as db:
        for kind in ("episodic", "semantic", "working"):
            manager = MemoryManager(
                user_id=f"adds_{kind}", database=db, embedder=embedder, extractor=RuleExtractor()
            )
            manager.add_memory(work.memory(), kind, 0.5)  # warm-up: model registration, jieba
            texts = [work.memory() for _ in range(single)]
            started = time.perf_counter()
            for text in texts:
                manager.add_memory(text, kind, 0.5)
            seconds = time.perf_counter() - started
            trips = count_round_trips(db, lambda m=manager, k=kind: m.add_memory(work.memory(), k, 0.5))
            results[kind] = {
                "single_adds_per_s": single / seconds,
                **{f"per_add_{k}": v for k, v in trips.items()},
            }
        manager = MemoryManager(
            user_id="adds_batch", database=db, embedder=embedder, extractor=RuleExtractor()
        )
        texts = [work.memory() for _ in range(batch_total)]
        started = time.perf_counter()
        for start in range(0, batch_total, 500):
            manager.add_memories(texts[start : start + 500], "episodic", 0.5)
        seconds = time.perf_counter() - started
        results["episodic"]["batch_adds_per_s"] = batch_total / seconds
        results["episodic"]["batch_size"] = 500
    return results


class TimedEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        started = time.perf_counter()
        try:
            return super()._encode(texts)
        finally:
            self.seconds += time.perf_counter() - started


def measure_rag(settings: Settings, documents: int) -> dict[str, Any]:
    work = Workload(31337)
    texts = [work.document(i) for i in range(documents)]
    embedder = TimedEmbedder()
    with Database(settings) as db:
        kb = KnowledgeBase(db, embedder, "bench")
        started = time.perf_counter()
        chunks = sum(
            kb.add_text(text, f"doc{i}", chunk_size=200, chunk_overlap=30).chunks
            for i, text in enumerate(texts)
        )
        total = time.perf_counter() - started
        per_document_embedding = embedder.seconds
        # the bulk path: add_texts, 100 documents per transaction, into a second namespace
        batch_kb = KnowledgeBase(db, TimedEmbedder(), "bench_batch")
        started = time.perf_counter()
        for first in range(0, len(texts), 100):
            batch = [TextDocument(t, f"doc{first + j}") for j, t in enumerate(texts[first : first + 100])]
            batch_kb.add_texts(batch, chunk_size=200, chunk_overlap=30)
        batch_total = time.perf_counter() - started
        batch_embedding = batch_kb.embedder.seconds  # type: ignore[attr-defined]
        vectors, _ = query_vectors(embedder, 200, 7)
        latencies = []
        from hello_pgmem.rag.store import SEARCH as CHUNK_SEARCH

        with db.connection() as conn:
            for vector in vectors:
                started = time.perf_counter()
                conn.execute(
                    CHUNK_SEARCH,
                    {
                        "namespace": "bench",
                        "model": embedder.model_name,
                        "query": vector,
                        "text": "项目 上线",
                        "limit": 5,
                        "document_ids": None,
                        "fusion": "rrf",
                        "pool": 20,
                    },
                ).fetchall()
                latencies.append((time.perf_counter() - started) * 1000)
    return {
        "documents": documents,
        "chunks": chunks,
        "seconds": total,
        "embedding_seconds": per_document_embedding,
        "chunks_per_s_including_embedding": chunks / total,
        "chunks_per_s_excluding_embedding": chunks / (total - per_document_embedding),
        "batch_documents_per_call": 100,
        "batch_seconds": batch_total,
        "batch_chunks_per_s_including_embedding": chunks / batch_total,
        "batch_chunks_per_s_excluding_embedding": chunks / (batch_total - batch_embedding),
        "search_latency_ms": percentiles(latencies),
    }
