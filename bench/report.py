"""Markdown summary and charts of a suite run (called by suite.py; can be re-run on a JSON file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

TARGETS = {
    "recall_10x10k": 0.95,
    "recall_1x100k": 0.95,
    "p50_100k": 5.0,
    "p99_100k": 15.0,
    "semantic_p50_100k": 15.0,
    "batch_adds": 1000.0,
    "rag_chunks": 2000.0,
}


def _mark(ok: bool) -> str:
    return "met" if ok else "**not met**"


def write_report(report: dict[str, Any], out: Path, docs: Path, quick: bool = False) -> None:
    s = report["scenarios"]
    multi, solo, sem = s["10x10k"]["search"], s["1x100k"]["search"], s["semantic_100k"]["search"]
    adds, rag = s["adds"], s["rag"]
    rows = [
        (
            "every search returns k rows (10x10k)",
            f"{multi['full_k_share']:.0%} of queries, min {multi['rows_returned_min']}",
            "100%",
            _mark(multi["full_k_share"] == 1.0),
        ),
        (
            "… with a 1-in-1000 session filter",
            f"{s['10x10k']['search_rare_session']['full_k_share']:.0%}, min "
            f"{s['10x10k']['search_rare_session']['rows_returned_min']}",
            "100%",
            _mark(s["10x10k"]["search_rare_session"]["full_k_share"] == 1.0),
        ),
        (
            "recall@10 episodic, 10 users x 10k",
            f"{multi['recall_at_k']:.3f}",
            ">= 0.95",
            _mark(multi["recall_at_k"] >= TARGETS["recall_10x10k"]),
        ),
        (
            "recall@10 episodic, 1 user x 100k",
            f"{solo['recall_at_k']:.3f}",
            ">= 0.95",
            _mark(solo["recall_at_k"] >= TARGETS["recall_1x100k"]),
        ),
        (
            "episodic search p50 / p99, 1 user x 100k",
            f"{solo['latency_ms']['p50']:.2f} / {solo['latency_ms']['p99']:.2f} ms",
            "<= 5 / 15 ms",
            _mark(solo["latency_ms"]["p50"] <= 5 and solo["latency_ms"]["p99"] <= 15),
        ),
        ("query embedding (hashing), per query", f"{solo['embedding_ms_per_query']:.2f} ms", "reported", "—"),
        (
            "semantic search, 2-hop graph, p50, 100k",
            f"{sem['latency_ms']['p50']:.2f} ms",
            "<= 15 ms",
            _mark(sem["latency_ms"]["p50"] <= TARGETS["semantic_p50_100k"]),
        ),
        (
            "batch adds (episodic, 500 per call)",
            f"{adds['episodic']['batch_adds_per_s']:.0f}/s",
            ">= 1000/s",
            _mark(adds["episodic"]["batch_adds_per_s"] >= TARGETS["batch_adds"]),
        ),
        (
            "single add: round trips / statements",
            f"{adds['episodic']['per_add_round_trips']} / "
            f"{adds['episodic']['per_add_statements']} (episodic)",
            "as few as possible",
            "—",
        ),
        (
            "RAG ingest excluding embedding (one document per call / add_texts, 100 per call)",
            f"{rag['chunks_per_s_excluding_embedding']:.0f} / "
            f"{rag['batch_chunks_per_s_excluding_embedding']:.0f} chunks/s",
            ">= 2000/s",
            _mark(rag["batch_chunks_per_s_excluding_embedding"] >= TARGETS["rag_chunks"]),
        ),
    ]
    growth = report["growth"]
    lines = [
        "# Benchmark summary" + (" (quick sizes)" if quick else ""),
        "",
        f"Machine: {report['machine']['platform']}, {report['machine']['cpus']} cores; PostgreSQL "
        f"{report['machine']['postgresql']}, pgvector {report['machine']['pgvector']}, AGE "
        f"{report['machine']['age']}; embedder {report['machine']['embedder']}; HNSW m=16, "
        f"ef_construction=64; {report['settings']['queries']} warm queries, k={report['settings']['k']}. "
        f"Date {report['machine']['date'][:16]}.",
        "",
        "## Targets",
        "",
        "| metric | measured | target | |",
        "|---|---|---|---|",
    ]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    lines += [
        "",
        "## Search latency and recall by size (1 user)",
        "",
        "| memories | p50 ms | p95 ms | p99 ms | recall@10 | load rows/s (COPY) | HNSW build s | MB per 100k |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for g in growth:
        lat = g["search"]["latency_ms"]
        lines.append(
            f"| {g['rows']:,} | {lat['p50']:.2f} | {lat['p95']:.2f} | {lat['p99']:.2f} | "
            f"{g['search']['recall_at_k']:.3f} | {g['load']['copy_rows_per_s']:.0f} | "
            f"{g['load']['index_build_seconds']:.1f} | {g['load']['bytes_per_100k'] / 1e6:.0f} |"
        )
    lines += [
        "",
        "## Adds through the API",
        "",
        "| type | single adds/s | round trips per add | statements per add |",
        "|---|---|---|---|",
    ]
    for kind in ("episodic", "semantic", "working"):
        a = adds[kind]
        lines.append(
            f"| {kind} | {a['single_adds_per_s']:.0f} | {a['per_add_round_trips']} | {a['per_add_statements']} |"
        )
    lines += [
        "",
        f"Batch API (`add_memories`, 500 per call): {adds['episodic']['batch_adds_per_s']:.0f} episodic memories/s.",
        "",
        "## RAG",
        "",
        f"{rag['documents']} documents, {rag['chunks']} chunks: {rag['chunks_per_s_including_embedding']:.0f} chunks/s "
        f"including the hashing embedder, {rag['chunks_per_s_excluding_embedding']:.0f} excluding it; hybrid "
        f"search p50 {rag['search_latency_ms']['p50']:.2f} ms. Through `add_texts` with "
        f"{rag['batch_documents_per_call']} documents per transaction: "
        f"{rag['batch_chunks_per_s_including_embedding']:.0f} chunks/s including the embedder, "
        f"{rag['batch_chunks_per_s_excluding_embedding']:.0f} excluding it.",
        "",
        "## ef_search (raw HNSW query, 1 user x 100k, iterative scan)",
        "",
        "| ef_search | recall@10 | p50 ms |",
        "|---|---|---|",
    ]
    lines += [
        f"| {c['ef_search']} | {c['recall']:.3f} | {c['p50_ms']:.2f} |"
        for c in s["1x100k"].get("ef_search_curve", [])
    ]
    out.write_text("\n".join(lines) + "\n")
    if not quick:
        charts(report, docs)


def charts(report: dict[str, Any], docs: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    docs.mkdir(exist_ok=True)
    growth = report["growth"]
    sizes = [g["rows"] for g in growth]
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, label in (("p50", "p50"), ("p95", "p95"), ("p99", "p99")):
        ax.plot(sizes, [g["search"]["latency_ms"][key] for g in growth], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("memories of the user")
    ax.set_ylabel("episodic search latency (ms)")
    ax.set_title("Latency vs rows (k=10, hashing-v1-384)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(docs / "bench-latency-vs-rows.png", dpi=120)
    plt.close(fig)
    curve = report["scenarios"]["1x100k"].get("ef_search_curve", [])
    if curve:
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot([c["p50_ms"] for c in curve], [c["recall"] for c in curve], marker="o")
        for c in curve:
            ax.annotate(
                f"ef={c['ef_search']}",
                (c["p50_ms"], c["recall"]),
                textcoords="offset points",
                xytext=(4, -10),
                fontsize=8,
            )
        ax.set_xlabel("p50 latency (ms)")
        ax.set_ylabel("recall@10 vs exact search")
        ax.set_title("Recall vs latency, 1 user x 100k")
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        fig.savefig(docs / "bench-recall-vs-latency.png", dpi=120)
        plt.close(fig)

