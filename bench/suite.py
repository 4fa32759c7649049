"""The benchmark suite (run by hand, never in CI).

    .venv/bin/python -m bench.suite                      # 10 users x 10k, 1 user x 100k, adds, RAG
    .venv/bin/python -m bench.suite --million            # also 1 user x 1M (long: about an hour)
    .venv/bin/python -m bench.suite --quick              # small sizes, to try the suite itself
    .venv/bin/python -m bench.suite --report RESULT.json # the summary and charts of a results file again

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
from pathlib import Path
from typing import Any

import numpy as np

from bench import harness
from bench.harness import fresh_database, percentiles
from bench.loads import bulk_load, measure_adds, measure_rag, query_vectors
from hello_pgmem import (
    Database,
    HashingEmbedder,
    MemoryManager,
    MemorySearch,
)
from hello_pgmem.graph.extraction import RuleExtractor
from hello_pgmem.graph.normalize import normalize_name

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DOCS = HERE.parent / "docs"
MODEL_DIM = 384


# --------------------------------------------------------------------------- setup


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
    parser.add_argument("--report", type=Path, help="only write the summary and charts of this results file")
    args = parser.parse_args()
    if args.report is not None:
        from bench.report import write_report

        write_report(json.loads(args.report.read_text()), RESULTS / "summary.md", DOCS)
        return
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
