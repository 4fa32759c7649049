"""Ingest beside its embeddings: how soon a folder is searchable by its words, and how fast the
queue then drains against the embedder's bare rate on the same texts.

    .venv/bin/python -m bench.ingest_queue                 # docs/ with E5 (queued) and hashing (in the write)
    .venv/bin/python -m bench.ingest_queue --path docs --embedder e5 --threads 1,2

For each run, a fresh database on the development server and one namespace:

* ``hashing``: ``ingest`` with the hashing embedder, which embeds in the write: the time until
  every chunk is stored (and searchable).
* the model (``--embedder``, E5 by default): ``ingest`` with the chunks queued, the time until every
  chunk is stored and searchable by its words (checked: a word of each document finds it); then
  ``wait_for_embeddings`` with 1 and 2 workers (``--threads``), the time to drain the queue.
* the embedder's bare rate: the same chunk texts embedded in batches of the worker's parts, with no
  database, as bench/embedders.py measures an embedder.

Prints JSON and writes bench/results/ingest-queue-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from bench import harness
from bench.datasets import loaders
from bench.harness import fresh_database
from hello_pgmem import Database, HashingEmbedder
from hello_pgmem.embedding import Embedder
from hello_pgmem.embedding_queue import wait_for_embeddings
from hello_pgmem.embedding_queue.worker import Claimed, in_parts
from hello_pgmem.rag.knowledge import KnowledgeBase

RESULTS = Path(__file__).resolve().parent / "results"
CHUNK_TEXTS = """
SELECT c.content, c.heading_path FROM chunks c WHERE c.namespace = %(namespace)s ORDER BY c.document_id, c.position
"""


def ingest(settings: Any, embedder: Embedder, path: Path) -> tuple[dict[str, Any], list[str]]:
    """Ingest ``path``; how long until stored, and the chunks' embedding texts."""
    from hello_pgmem.embedding_queue.texts import chunk_embedding_text

    with Database(settings) as db:
        kb = KnowledgeBase(db, embedder, "bench")
        started = time.perf_counter()
        results = kb.ingest([path])
        stored = time.perf_counter() - started
        found = sum(bool(kb.search(r.document_id.rsplit("/", 1)[-1].split(".")[0], top_k=5)) for r in results)
        with kb.transaction() as conn:
            texts = [chunk_embedding_text(c, h) for c, h in conn.execute(CHUNK_TEXTS, {"namespace": "bench"})]
        queued = kb.stats().pending_embeddings
    report = {
        "model": embedder.model_name,
        "files": len(results),
        "chunks": len(texts),
        "characters": sum(len(t) for t in texts),
        "stored_s": round(stored, 2),
        "queued": queued,
        "searches_that_found_something": found,
    }
    return report, texts


def drain(settings: Any, embedder: Embedder, threads: int) -> dict[str, Any]:
    """Empty the queue with ``threads`` workers; seconds and chunks a second."""
    with Database(settings) as db:
        db.ensure_embedding_model(embedder.model_name, embedder.dimension)
        done: list[int] = []
        started = time.perf_counter()

        def work() -> None:
            done.append(wait_for_embeddings(db, embedder))

        pool = [threading.Thread(target=work) for _ in range(threads)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        seconds = time.perf_counter() - started
    return {"threads": threads, "embedded": sum(done), "seconds": round(seconds, 2),
            "chunks_per_s": round(sum(done) / seconds, 2)}  # fmt: skip


def bare(embedder: Embedder, texts: list[str]) -> dict[str, Any]:
    """The same texts embedded with no database, in the worker's parts."""
    claimed = [Claimed("chunk", "bench", uuid.uuid4(), 1, 0, text) for text in texts]
    started = time.perf_counter()
    for part in in_parts(claimed, embedder):
        embedder.encode_documents([row.text for row in part])
    seconds = time.perf_counter() - started
    return {"seconds": round(seconds, 2), "chunks_per_s": round(len(texts) / seconds, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--path", type=Path, default=Path(__file__).resolve().parent.parent / "docs")
    parser.add_argument("--embedder", default="e5", help="a name of bench/embedders.py")
    parser.add_argument("--threads", default="1,2", help="worker threads to drain with, comma-separated")
    args = parser.parse_args()
    model = loaders()[args.embedder]()
    report: dict[str, Any] = {"machine": harness.machine(), "path": str(args.path)}
    with fresh_database(embedding_queue_workers=0) as settings:
        report["hashing"], _ = ingest(settings, HashingEmbedder(), args.path)
    print(json.dumps(report["hashing"]), flush=True)
    runs = []
    texts: list[str] = []
    for threads in (int(t) for t in args.threads.split(",")):
        with fresh_database(embedding_queue_workers=0, embed="queue") as settings:
            stored, texts = ingest(settings, model, args.path)
            run = {**stored, "drain": drain(settings, model, threads)}
        print(json.dumps(run), flush=True)
        runs.append(run)
    report["model"] = runs
    report["bare"] = bare(model, texts)
    print(json.dumps(report["bare"]), flush=True)
    RESULTS.mkdir(exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M")
    (RESULTS / f"ingest-queue-{stamp}.json").write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
