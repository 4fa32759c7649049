"""The embedding queue under contention, without faults: writers and every kind of claimer at once.

    .venv/bin/python -m bench.queue_stress stress --seconds 600
    .venv/bin/python -m bench.queue_stress backlog --rows 10000 --runs 5

``stress``: a scratch server of the development root (its log read afterwards), a store whose
writes queue their vectors (the hashing embedder declared a model, slowed to 2 ms a text so that
claims overlap), two users. Three writers add, add batches of ten, give their memories new texts
and remove them; four claimers take the rows at once: the store's two background workers, a
thread that waits for a user's vectors over and over (``wait_for_embeddings``), and a thread that
searches, each search catching up on the few rows queued. After ``--seconds`` the writers stop,
the queue is drained, and every live memory is checked: there with its latest acknowledged text,
a removed one gone, its vector that of its text; ``hello-pgmem check`` clean; and the server's
log searched for ``deadlock detected``.

``backlog``: ``--rows`` memories queued with no worker running, then ``wait_for_embeddings`` of
the user beside the process's own background worker, ``--runs`` times: whether each ends without
an error, how long it took, how many rows it embedded itself.

Writes bench/results/queue-stress-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import harness
from hello_pgmem import Database, HashingEmbedder, Store
from hello_pgmem.core.errors import HelloPgmemError
from hello_pgmem.dev import DevDB
from hello_pgmem.dev.scratch import ScratchServer
from hello_pgmem.ops.check import check_integrity

RESULTS = Path(__file__).resolve().parent / "results"
USERS = ("stress_a", "stress_b")


class SlowHashing(HashingEmbedder):
    """The hashing embedder at 2 ms a text: claims, stores and writes overlap as with a model."""

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        time.sleep(0.002 * len(texts))
        return super()._encode(texts)


class Ledger:
    """What the writers were told: each memory's latest acknowledged text, and those removed. A
    call that failed may have committed: its text goes to ``maybe``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latest: dict[uuid.UUID, tuple[str, str]] = {}  # id -> (user, text)
        self.maybe: dict[uuid.UUID, set[str]] = {}
        self.removed: set[uuid.UUID] = set()
        self.texts: dict[uuid.UUID, list[str]] = {}  # every text a memory was given, in order
        self.errors: list[str] = []
        self.operations = 0


def writer(store: Store, number: int, stop: threading.Event, ledger: Ledger) -> None:
    """Adds, batches of ten, new texts and removals, on both users, until ``stop``."""
    rng = random.Random(number)
    managers = {user: store.memory(user, types=["episodic"]) for user in USERS}
    mine: dict[str, list[uuid.UUID]] = {user: [] for user in USERS}
    i = 0
    while not stop.is_set():
        user = rng.choice(USERS)
        memory = managers[user]
        text = f"writer {number} note {i} about the harbour and the ferry #{uuid.uuid4().hex[:6]}"
        roll = rng.random()
        try:
            if roll < 0.35 or not mine[user]:
                memory_id = memory.add_memory(text, "episodic")
                mine[user].append(memory_id)
                with ledger.lock:
                    ledger.latest[memory_id] = (user, text)
                    ledger.texts[memory_id] = [text]
            elif roll < 0.5:
                texts = [f"{text} part {k}" for k in range(10)]
                ids = memory.add_memories(texts, "episodic")
                mine[user].extend(ids)
                with ledger.lock:
                    ledger.latest.update({m: (user, t) for m, t in zip(ids, texts, strict=True)})
                    ledger.texts.update({m: [t] for m, t in zip(ids, texts, strict=True)})
            elif roll < 0.85:
                target = rng.choice(mine[user])
                with ledger.lock:
                    ledger.texts.setdefault(target, []).append(text)
                if memory.update_memory(target, content=text):
                    with ledger.lock:
                        ledger.latest[target] = (user, text)
                        ledger.maybe.pop(target, None)
            else:
                target = mine[user].pop(rng.randrange(len(mine[user])))
                if memory.remove_memory(target):
                    with ledger.lock:
                        ledger.latest.pop(target, None)
                        ledger.removed.add(target)
        except Exception as exc:  # counted: the run goes on, as a service would
            with ledger.lock:
                ledger.errors.append(f"writer: {type(exc).__name__}: {exc}"[:300])
        with ledger.lock:
            ledger.operations += 1
        i += 1


def waiter(store: Store, stop: threading.Event, ledger: Ledger, counts: dict[str, int]) -> None:
    """Waits for one user's vectors, over and over."""
    memory = store.memory(USERS[0], types=["episodic"])
    while not stop.is_set():
        try:
            counts["waited_embedded"] += memory.wait_for_embeddings(timeout=60)
            counts["waits"] += 1
        except HelloPgmemError as exc:
            with ledger.lock:
                ledger.errors.append(f"waiter: {type(exc).__name__}: {exc}"[:300])
        stop.wait(0.2)


def searcher(store: Store, stop: threading.Event, ledger: Ledger, counts: dict[str, int]) -> None:
    """Searches the other user, each search catching up on the few rows queued."""
    memory = store.memory(USERS[1], types=["episodic"])
    while not stop.is_set():
        try:
            memory.retrieve_memories("the harbour ferry note", limit=5)
            counts["searches"] += 1
        except Exception as exc:  # counted: the run goes on, as a service would
            with ledger.lock:
                ledger.errors.append(f"searcher: {type(exc).__name__}: {exc}"[:300])


def verify(db: Database, ledger: Ledger) -> dict[str, Any]:
    """Every acknowledged memory there with its latest text and that text's vector, every removed
    one gone, ``check`` clean."""
    embedder = HashingEmbedder()
    rows: dict[uuid.UUID, tuple[str, Any]] = {}
    for user in USERS:
        with db.transaction(user) as conn:
            for memory_id, content, vector in conn.execute(
                "SELECT id, content, embedding FROM memories WHERE user_id = %s AND version_of IS NULL",
                (user,),
            ):
                rows[memory_id] = (content, vector)
    missing = [m for m in ledger.latest if m not in rows]
    wrong_text = [
        m
        for m, (_, text) in ledger.latest.items()
        if m in rows and rows[m][0] not in {text, *ledger.maybe.get(m, ())}
    ]
    still_there = [m for m in ledger.removed if m in rows]
    without_vector = [m for m, (_, vector) in rows.items() if vector is None]
    of_another_text, samples = 0, []
    for memory_id, (content, vector) in rows.items():
        if vector is not None:
            expected = embedder.encode_documents([content])[0]
            if float(vector.to_numpy() @ expected) < 0.9999:
                of_another_text += 1
                texts = ledger.texts.get(memory_id, [])
                made_of = [
                    n
                    for n, t in enumerate(texts)
                    if float(vector.to_numpy() @ embedder.encode_documents([t])[0]) > 0.9999
                ]
                samples.append(
                    {
                        "id": str(memory_id),
                        "texts": len(texts),
                        "vector_of_text_number": made_of,
                        "current": texts.index(content) if content in texts else None,
                    }
                )
    report = check_integrity(db)
    return {
        "live_memories": len(rows),
        "acknowledged_live": len(ledger.latest),
        "removed": len(ledger.removed),
        "missing": len(missing),
        "wrong_text": len(wrong_text),
        "removed_but_there": len(still_there),
        "without_vector": len(without_vector),
        "vector_of_another_text": of_another_text,
        "vector_of_another_text_samples": samples[:5],
        "check": report.text().splitlines()[-1] if report.ok else report.text(),
    }


def stress(seconds: float) -> dict[str, Any]:
    with ScratchServer.running(DevDB.from_env(), "queue_stress") as server:
        settings = server.new_database(
            "stress", embed="queue", embedding_queue_workers=2, embedding_queue_poll_s=1
        )
        log = server.db.inside(server.data_dir) / "server.log"
        logged_before = log.read_text(errors="replace").count("deadlock detected") if log.exists() else 0
        ledger = Ledger()
        counts = {"waits": 0, "waited_embedded": 0, "searches": 0}
        stop = threading.Event()
        with Database(settings) as db, Store(database=db, embedder=SlowHashing()) as store:
            threads = [threading.Thread(target=writer, args=(store, n, stop, ledger)) for n in range(3)]
            threads += [
                threading.Thread(target=waiter, args=(store, stop, ledger, counts)),
                threading.Thread(target=searcher, args=(store, stop, ledger, counts)),
            ]
            harness.run_for(threads, seconds, stop, join_s=120)
            started = time.perf_counter()
            store.wait_for_embeddings(timeout=600, everyone=True)
            drained = time.perf_counter() - started
            result = verify(db, ledger)
        logged = log.read_text(errors="replace")
        deadlocks = logged.count("deadlock detected") - logged_before
        samples = [
            "\n".join(logged[at:].splitlines()[:12])
            for at in _positions(logged, "deadlock detected")[logged_before:][:3]
        ]
    return {
        "seconds": seconds,
        "writer_operations": ledger.operations,
        **counts,
        "errors": len(ledger.errors),
        "first_errors": ledger.errors[:5],
        "drain_after_s": round(drained, 1),
        "deadlocks_in_server_log": deadlocks,
        "deadlock_samples": samples,
        **result,
    }


def _positions(text: str, word: str) -> list[int]:
    """Where ``word`` starts in ``text``, each time."""
    found, at = [], text.find(word)
    while at >= 0:
        found.append(at)
        at = text.find(word, at + 1)
    return found


def backlog(rows: int, runs: int) -> list[dict[str, Any]]:
    outcomes = []
    with harness.fresh_database(embed="queue", embedding_queue_workers=0) as quiet:
        for run in range(runs):
            user = f"backlog_{run}"
            with Database(quiet) as db:
                memory = Store(database=db, embedder=SlowHashing()).memory(user, types=["episodic"])
                for start in range(0, rows, 1000):
                    memory.add_memories(
                        [f"backlog note {n} of run {run}" for n in range(start, start + 1000)], "episodic"
                    )
            with (
                Database(quiet.model_copy(update={"embedding_queue_workers": 1})) as db,
                Store(database=db, embedder=SlowHashing()) as store,
            ):
                memory = store.memory(user, types=["episodic"])
                memory.add_memory("one more, which starts the process's worker", "episodic")
                started = time.perf_counter()
                try:
                    embedded = memory.wait_for_embeddings(timeout=900)
                    outcome: dict[str, Any] = {"ok": True, "embedded_by_the_wait": embedded}
                except HelloPgmemError as exc:
                    outcome = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
                outcome["seconds"] = round(time.perf_counter() - started, 1)
            outcomes.append(outcome)
            print(json.dumps(outcome), flush=True)
    return outcomes


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("scenario", choices=["stress", "backlog"])
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    report: dict[str, Any] = {"machine": harness.machine()}
    if args.scenario == "stress":
        report["stress"] = stress(args.seconds)
    else:
        report["backlog"] = backlog(args.rows, args.runs)
    print(json.dumps(report[args.scenario], indent=2, default=str), flush=True)
    RESULTS.mkdir(exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M")
    (RESULTS / f"queue-stress-{args.scenario}-{stamp}.json").write_text(
        json.dumps(report, indent=2, default=str)
    )


if __name__ == "__main__":
    main()
