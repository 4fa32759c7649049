"""The benchmark suite (run by hand, never in CI).

    .venv/bin/python -m bench.suite                      # 10 users x 10k, 1 user x 100k, adds, RAG
    .venv/bin/python -m bench.suite --million            # also 1 user x 1M (long: about an hour)
    .venv/bin/python -m bench.suite --quick              # small sizes, to try the suite itself

Each run uses a fresh database on the development server, bulk-loads with COPY (the normal add
path is measured separately), and writes bench/results/suite-<date>.json, bench/results/summary.md
and the charts under docs/.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from psycopg import sql

from bench import harness
from bench.harness import fresh_database, percentiles
from hello_pgmem import (
    Database,
    HashingEmbedder,
    KnowledgeBase,
    MemoryManager,
    MemorySearch,
    Settings,
    TextDocument,
)
from hello_pgmem.dev.trace import count_round_trips
from hello_pgmem.graph.extraction import RuleExtractor
from hello_pgmem.graph.normalize import normalize_name

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DOCS = HERE.parent / "docs"
MODEL_DIM = 384


# --------------------------------------------------------------------------- setup


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
    from bench.workload import Workload

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


# --------------------------------------------------------------------------- search

SEARCH = (
    "SELECT id FROM search_by_recency(%(user)s, %(model)s, %(q)s, p_limit => %(k)s, p_session_id => %(session)s,"
    " p_now => %(now)s)"
)
# the candidates search_by_recency ranks: limit x 5 by vector; recall compares their top k to exact
CANDIDATES = (
    "SELECT 1 - vector_score FROM memory_candidates(%(user)s, %(model)s, %(q)s, %(k)s * 5,"
    " memory_filter(p_session_id => %(session)s)) ORDER BY vector_score DESC LIMIT %(k)s"
)
EXACT = """
SELECT embedding <=> %(q)s FROM memories WHERE user_id = %(user)s AND embedding_model = %(model)s
  AND forgotten_at IS NULL AND (%(session)s::text IS NULL OR session_id = %(session)s)
ORDER BY embedding <=> %(q)s LIMIT %(k)s
"""
RAW = """
SELECT d FROM (SELECT id, embedding::vector(384) <=> %(q)s::vector(384) AS d FROM memories
               WHERE user_id = %(user)s AND embedding_model = %(model)s AND forgotten_at IS NULL
               ORDER BY embedding::vector(384) <=> %(q)s::vector(384) LIMIT %(k)s) n
"""


def recall(found: list[float], exact: list[float]) -> float:
    """Share of the k found whose distance is within the exact k-th distance: identical texts tie at
    the same distance, and any of them is a right answer (the usual tie-aware recall)."""
    if not exact:
        return 1.0
    return sum(1 for d in found if d <= exact[-1] + 1e-9) / len(exact)


def query_vectors(
    embedder: HashingEmbedder, count: int, seed: int, short: bool = False
) -> tuple[list[np.ndarray], float]:
    """Query vectors: held-out memories (the usual ANN methodology), or short template queries,
    which tie with thousands of memories at nearly the same distance (a stress case for recall)."""
    from bench.workload import Workload

    work = Workload(10_000 + seed)
    texts = [work.query() if short else work.memory() for _ in range(count)]
    started = time.perf_counter()
    vectors = list(embedder.encode_documents(texts))
    return vectors, (time.perf_counter() - started) / count * 1000


def measure_search(
    db: Database,
    embedder: HashingEmbedder,
    users: list[str],
    queries: int,
    k: int,
    session: str | None = None,
    short: bool = False,
) -> dict[str, Any]:
    vectors, embed_ms = query_vectors(embedder, queries, len(users), short)
    latencies, returned, recalls = [], [], []

    def params_for(i: int, vector: np.ndarray) -> dict[str, Any]:
        return {
            "user": users[i % len(users)],
            "model": embedder.model_name,
            "q": vector,
            "k": k,
            "session": session,
            "now": dt.datetime.now(dt.UTC),
        }

    with db.connection() as conn:
        for i, vector in enumerate(vectors[:10]):  # warm-up
            conn.execute(SEARCH, params_for(i, vector)).fetchall()
        for i, vector in enumerate(vectors):
            params = params_for(i, vector)
            started = time.perf_counter()
            rows = conn.execute(SEARCH, params).fetchall()
            latencies.append((time.perf_counter() - started) * 1000)
            returned.append(len(rows))
            found = [r[0] for r in conn.execute(CANDIDATES, params).fetchall()]
            exact = [r[0] for r in conn.execute(EXACT, params).fetchall()]
            recalls.append(recall(found, exact))
        conn.rollback()
    return {
        "queries": queries,
        "query_kind": "short template queries" if short else "held-out memories",
        "k": k,
        "session_filter": session,
        "latency_ms": percentiles(latencies),
        "embedding_ms_per_query": embed_ms,
        "rows_returned_min": min(returned),
        "rows_returned_mean": statistics.fmean(returned),
        "full_k_share": sum(r == k for r in returned) / len(returned),
        "recall_at_k": statistics.fmean(recalls),
        "recall_at_k_min": min(recalls),
    }


def ef_search_curve(
    db: Database, embedder: HashingEmbedder, user: str, queries: int, k: int
) -> list[dict[str, float]]:
    """Recall and latency of the raw HNSW query for several hnsw.ef_search values."""
    vectors, _ = query_vectors(embedder, queries, 99)
    curve = []
    with db.connection() as conn:
        for ef in (10, 20, 40, 80, 120, 200, 400):
            conn.execute(f"SET hnsw.ef_search = {ef}")
            conn.execute("SET hnsw.iterative_scan = relaxed_order")
            latencies, recalls = [], []
            for vector in vectors:
                params = {"user": user, "model": embedder.model_name, "q": vector, "k": k, "session": None}
                started = time.perf_counter()
                found = [r[0] for r in conn.execute(RAW, params).fetchall()]
                latencies.append((time.perf_counter() - started) * 1000)
                exact = [r[0] for r in conn.execute(EXACT, params).fetchall()]
                recalls.append(recall(found, exact))
            curve.append(
                {
                    "ef_search": ef,
                    "recall": statistics.fmean(recalls),
                    "p50_ms": percentiles(latencies)["p50"],
                }
            )
        conn.execute("RESET hnsw.ef_search")
        conn.execute("RESET hnsw.iterative_scan")
        conn.commit()
    return curve


# --------------------------------------------------------------------------- adds


def measure_adds(
    settings: Settings, embedder: HashingEmbedder, single: int, batch_total: int
) -> dict[str, Any]:
    from bench.workload import Workload

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


# --------------------------------------------------------------------------- semantic with graph


def load_graph(db: Database, embedder: HashingEmbedder, user: str, count: int) -> dict[str, Any]:
    """Semantic memories with their rule-extracted graph, bulk-loaded."""
    from bench.workload import Workload

    loaded = bulk_load(db, embedder, {user: count}, "semantic", seed=500)
    extractor = RuleExtractor()
    with db.connection() as conn:
        rows = conn.execute("SELECT id, content FROM memories WHERE user_id = %s", (user,)).fetchall()
    started = time.perf_counter()
    entities: dict[str, tuple[uuid.UUID, str, str]] = {}
    mentions, relations = set(), set()
    for memory_id, content in rows:
        found = extractor.extract(content)
        for e in found.entities:
            key = normalize_name(e.name)
            entities.setdefault(key, (uuid.uuid4(), e.name, e.type))
            mentions.add((memory_id, entities[key][0]))
        for r in found.relations:
            relations.add(
                (
                    entities[normalize_name(r.source)][0],
                    r.type,
                    entities[normalize_name(r.target)][0],
                    memory_id,
                )
            )
    extract_seconds = time.perf_counter() - started
    with db.connection() as conn, conn.cursor() as cur:
        with cur.copy("COPY entities (user_id, id, name, name_norm, entity_type) FROM STDIN") as copy:
            for key, (eid, name, kind) in entities.items():
                copy.write_row((user, eid, name, key, kind))
        with cur.copy("COPY mentions (user_id, memory_id, entity_id) FROM STDIN") as copy:
            for memory_id, eid in mentions:
                copy.write_row((user, memory_id, eid))
        with cur.copy(
            "COPY relations (user_id, source_id, relation_type, target_id, memory_id) FROM STDIN"
        ) as copy:
            for source, kind, target, memory_id in relations:
                copy.write_row((user, source, kind, target, memory_id))
        cur.execute("ANALYZE entities; ANALYZE mentions; ANALYZE relations")
    del Workload
    return {
        **loaded,
        "entities": len(entities),
        "mentions": len(mentions),
        "relations": len(relations),
        "rule_extraction_per_s": len(rows) / extract_seconds,
    }


def measure_semantic(
    db: Database, embedder: HashingEmbedder, user: str, queries: int, k: int
) -> dict[str, Any]:
    """The reference's semantic search (vector, graph within two hops, importance) through the API."""
    manager = MemoryManager(user_id=user, database=db, embedder=embedder, extractor=RuleExtractor())
    from bench.workload import Workload

    work = Workload(4242)
    searches = [MemorySearch(work.query(), ["semantic"], k, scoring="reference") for _ in range(queries)]
    for search in searches[:10]:
        manager.search(search, track_access=False)
    latencies, graph_hits, returned = [], [], []
    for search in searches:
        started = time.perf_counter()
        found = manager.search(search, track_access=False)
        latencies.append((time.perf_counter() - started) * 1000)
        returned.append(len(found))
        graph_hits.append(sum(1 for m in found if m.components.get("graph_score", 0) > 0))
    return {
        "queries": queries,
        "k": k,
        "max_hops": 2,
        "latency_ms": percentiles(latencies),
        "mean_results_with_graph_score": statistics.fmean(graph_hits),
        "rows_returned_min": min(returned),
    }


# --------------------------------------------------------------------------- RAG


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
    from bench.workload import Workload

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


# --------------------------------------------------------------------------- main


def machine() -> dict[str, Any]:
    return {
        **harness.machine(),
        "embedder": f"hashing-v1-{MODEL_DIM}",
        "hnsw": {"m": 16, "ef_construction": 64},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--million", action="store_true", help="also 1 user x 1,000,000 memories")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    embedder = HashingEmbedder(MODEL_DIM)
    report: dict[str, Any] = {"machine": machine(), "settings": vars(args), "scenarios": {}}
    scenarios = report["scenarios"]

    with fresh_database() as settings, Database(settings) as db:
        users = {f"user{i}": 10_000 // scale for i in range(10)}
        scenarios["10x10k"] = {"load": bulk_load(db, embedder, users)}
        scenarios["10x10k"]["search"] = measure_search(db, embedder, list(users), args.queries, args.k)
        scenarios["10x10k"]["search_rare_session"] = measure_search(
            db, embedder, list(users), args.queries // 4, args.k, session="rare"
        )
        scenarios["10x10k"]["search_short_queries"] = measure_search(
            db, embedder, list(users), args.queries // 2, args.k, short=True
        )
        print("10x10k", json.dumps(scenarios["10x10k"]["search"]["latency_ms"]), flush=True)

    sizes = [10_000 // scale, 100_000 // scale] + ([1_000_000] if args.million else [])
    report["growth"] = []
    for size in sizes:
        with fresh_database() as settings, Database(settings) as db:
            loaded = bulk_load(db, embedder, {"solo": size})
            measured = measure_search(db, embedder, ["solo"], args.queries, args.k)
            entry = {"rows": size, "load": loaded, "search": measured}
            if size == 100_000 // scale:
                entry["ef_search_curve"] = ef_search_curve(db, embedder, "solo", 100, args.k)
                entry["search_short_queries"] = measure_search(
                    db, embedder, ["solo"], args.queries // 2, args.k, short=True
                )
                scenarios["1x100k"] = entry
            report["growth"].append(entry)
            print(size, json.dumps(measured["latency_ms"]), measured["recall_at_k"], flush=True)

    with fresh_database() as settings, Database(settings) as db:
        graph = load_graph(db, embedder, "graph_user", 100_000 // scale)
        scenarios["semantic_100k"] = {
            "load": graph,
            "search": measure_semantic(db, embedder, "graph_user", args.queries, args.k),
        }
        print("semantic", json.dumps(scenarios["semantic_100k"]["search"]["latency_ms"]), flush=True)

    with fresh_database() as settings:
        scenarios["adds"] = measure_adds(settings, embedder, 300 // (1 if scale == 1 else 3), 5000 // scale)
        scenarios["rag"] = measure_rag(settings, 2000 // scale)
        print("adds", json.dumps(scenarios["adds"]), flush=True)

    RESULTS.mkdir(exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M")
    (RESULTS / f"suite-{stamp}{'-quick' if args.quick else ''}.json").write_text(
        json.dumps(report, indent=2, default=str)
    )
    from bench.report import write_report

    write_report(
        report, RESULTS / ("summary-quick.md" if args.quick else "summary.md"), DOCS, quick=args.quick
    )


if __name__ == "__main__":
    main()
