"""Write throughput alone: the add and ingest measurements of bench/suite.py, in a minute or two.

    .venv/bin/python -m bench.writes                 # 300 single adds per type, 5,000 in batches, 2,000 documents
    .venv/bin/python -m bench.writes --batch 20000   # more memories in batches

Each run uses a fresh database on the development server. Memories: one add per memory for each
type (with round trips per add), then ``add_memories`` in batches of 500. RAG: ``add_text`` per
document, then ``add_texts`` 100 documents at a time; chunks a second excluding the embedder's
time (the hashing embedder is timed and subtracted). Prints JSON and writes
bench/results/writes-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

from bench import harness
from bench.harness import fresh_database
from bench.loads import measure_adds, measure_rag
from hello_pgmem import HashingEmbedder

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--single", type=int, default=300, help="single adds per memory type")
    parser.add_argument("--batch", type=int, default=5000, help="memories added in batches of 500")
    parser.add_argument("--documents", type=int, default=2000, help="RAG documents")
    args = parser.parse_args()
    report = {"machine": harness.machine()}
    with fresh_database() as settings:
        report["adds"] = measure_adds(settings, HashingEmbedder(), args.single, args.batch)
        report["rag"] = measure_rag(settings, args.documents)
    print(json.dumps(report, indent=2, default=str))
    RESULTS.mkdir(exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M")
    (RESULTS / f"writes-{stamp}.json").write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
