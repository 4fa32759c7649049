"""Compare RRF and weighted-sum fusion (and vector or text alone) on a small labelled set.

Run: .venv/bin/python -m bench.rag_fusion   (needs the development database; prints a table and
writes bench/results/rag_fusion.json)
"""

from __future__ import annotations

import json
from pathlib import Path

from bench import harness
from bench.harness import fresh_database
from hello_pgmem import Database, HashingEmbedder, KnowledgeBase

HERE = Path(__file__).resolve().parent


def reciprocal_rank(ranked: list[str], wanted: str) -> float:
    return 1.0 / (ranked.index(wanted) + 1) if wanted in ranked else 0.0


def scores(ranks: list[float]) -> dict[str, float]:
    return {"mrr@5": sum(ranks) / len(ranks), "hit@1": sum(r == 1.0 for r in ranks) / len(ranks)}


def main() -> None:
    data = json.loads((HERE / "data" / "rag_labelled.json").read_text())
    results: dict[str, dict[str, float]] = {}
    with fresh_database() as settings, Database(settings) as db:
        kb = KnowledgeBase(db, HashingEmbedder(), "bench")
        for doc_id, text in data["documents"].items():
            kb.add_text(text, doc_id)
        for fusion in ("rrf", "weighted"):
            kb.fusion = fusion
            ranks = [
                reciprocal_rank([h.document_id for h in kb.search(q, 5)], want) for q, want in data["queries"]
            ]
            results[fusion] = scores(ranks)
        kb.fusion = "weighted"
        for branch in ("vector_score", "text_score"):  # one branch alone: re-rank a wide pool by it
            ranks = [
                reciprocal_rank(
                    [h.document_id for h in sorted(kb.search(q, 12), key=lambda h: -getattr(h, branch))][:5],
                    want,
                )
                for q, want in data["queries"]
            ]
            results[branch.replace("_score", " only")] = scores(ranks)
    out = {
        "machine": harness.machine(),
        "embedder": "hashing-v1-384",
        "queries": len(data["queries"]),
        "documents": len(data["documents"]),
        "results": results,
    }
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "rag_fusion.json").write_text(json.dumps(out, indent=2))
    print(f"{'method':<14} {'MRR@5':>7} {'hit@1':>7}")
    for method, value in results.items():
        print(f"{method:<14} {value['mrr@5']:>7.3f} {value['hit@1']:>7.3f}")


if __name__ == "__main__":
    main()
