"""Compare RRF and weighted-sum fusion (and vector or text alone) on a small labelled set.

Run: .venv/bin/python bench/rag_fusion.py   (needs the development database; prints a table and
writes bench/results/rag_fusion.json)
"""

from __future__ import annotations

import json
import platform
import uuid
from pathlib import Path

import psycopg
from psycopg import sql

from hello_pgmem import Database, HashingEmbedder, KnowledgeBase, Settings, dev, migrations

HERE = Path(__file__).resolve().parent


def reciprocal_rank(ranked: list[str], wanted: str) -> float:
    return 1.0 / (ranked.index(wanted) + 1) if wanted in ranked else 0.0


def main() -> None:
    data = json.loads((HERE / "data" / "rag_labelled.json").read_text())
    server = psycopg.conninfo.make_conninfo(dev.up(), dbname="postgres")
    name = f"pgmem_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        settings = Settings(database_url=psycopg.conninfo.make_conninfo(server, dbname=name))
        migrations.upgrade(settings)
        results = {}
        with Database(settings) as db:
            kb = KnowledgeBase(db, HashingEmbedder(), "bench")
            for doc_id, text in data["documents"].items():
                kb.add_text(text, doc_id)
            for fusion in ("rrf", "weighted"):
                kb.fusion = fusion
                ranks = [
                    reciprocal_rank([h.document_id for h in kb.search(q, 5)], want)
                    for q, want in data["queries"]
                ]
                results[fusion] = {
                    "mrr@5": sum(ranks) / len(ranks),
                    "hit@1": sum(r == 1.0 for r in ranks) / len(ranks),
                }
            kb.fusion = "weighted"
            vector_only = [
                reciprocal_rank(
                    [h.document_id for h in sorted(kb.search(q, 12), key=lambda h: -h.vector_score)][:5], want
                )
                for q, want in data["queries"]
            ]
            results["vector only"] = {
                "mrr@5": sum(vector_only) / len(vector_only),
                "hit@1": sum(r == 1.0 for r in vector_only) / len(vector_only),
            }
        out = {
            "machine": platform.platform(),
            "embedder": "hashing-v1-384",
            "queries": len(data["queries"]),
            "documents": len(data["documents"]),
            "results": results,
        }
        (HERE / "results").mkdir(exist_ok=True)
        (HERE / "results" / "rag_fusion.json").write_text(json.dumps(out, indent=2))
        print(f"{'method':<14} {'MRR@5':>7} {'hit@1':>7}")
        for method, scores in results.items():
            print(f"{method:<14} {scores['mrr@5']:>7.3f} {scores['hit@1']:>7.3f}")
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


if __name__ == "__main__":
    main()
