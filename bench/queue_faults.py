"""The embedding queue under faults: the server killed with SIGKILL while writers add and workers
embed, and an embedding endpoint that is down for a minute.

    .venv/bin/python -m bench.queue_faults                    # both scenarios
    .venv/bin/python -m bench.queue_faults crash --kills 4
    .venv/bin/python -m bench.queue_faults endpoint --down 60

``crash``: a scratch server of the development root, a store whose writes queue their vectors
(the hashing embedder, declared a model: ``PGMEM_EMBED=queue``) with a background worker and a
second worker thread. Three writers add memories and now and then give an earlier one a new
text; ``--kills`` times, the postmaster and every server process are killed with SIGKILL, and the
server is started again (crash recovery). Then the queue is drained and every acknowledged write
is checked: present, with its latest text, with the vector of that text; ``hello-pgmem check``
clean.

``endpoint``: an OpenAI-compatible endpoint (tests/fake_openai.py, the project's own fake) that
answers 503 for ``--down`` seconds, then answers again. Three writers add all along, ``--rate``
writes a second each (none may be refused); a background worker embeds; after the endpoint's
return, how long until the first and until every row has its vector, against the back-off period
in force at that moment (a worker whose model answers again makes every failed row due at once).

Writes bench/results/queue-faults-<date>.json.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from bench import harness
from hello_pgmem import Database, HashingEmbedder, OpenAIEmbedder, Store
from hello_pgmem.core.errors import HelloPgmemError
from hello_pgmem.dev import DevDB
from hello_pgmem.dev.scratch import ScratchServer
from hello_pgmem.embedding_queue import EmbeddingWorker
from hello_pgmem.ops.check import check_integrity

RESULTS = Path(__file__).resolve().parent / "results"


def kill_server(server: ScratchServer) -> None:
    """SIGKILL to the postmaster and to every process it started."""
    pid_file = server.db.inside(server.data_dir) / "postmaster.pid"
    postmaster = int(pid_file.read_text().splitlines()[0])
    children = [
        int(p.name)
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and (p / "stat").exists() and _parent(p) == postmaster
    ]
    for pid in [postmaster, *children]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{postmaster}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def _parent(proc: Path) -> int:
    try:
        return int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def writers(
    memory: Any,
    count: int,
    stop: threading.Event,
    acked: dict[uuid.UUID, str],
    refused: list[str],
    maybe: dict[uuid.UUID, set[str]] | None = None,
    pause: float = 0.0,
) -> list[threading.Thread]:
    """Threads that add memories and now and then give an earlier one of theirs a new text. A new
    text whose call failed may still have committed (the server died at the commit): it goes to
    ``maybe`` until a later one is acknowledged."""
    lock = threading.Lock()
    maybe = {} if maybe is None else maybe

    def write(n: int) -> None:
        mine: list[uuid.UUID] = []
        i = 0
        while not stop.is_set():
            text = f"writer {n} note {i} about the harbour and the ferry #{uuid.uuid4().hex[:6]}"
            target = mine[i % len(mine)] if mine and i % 5 == 4 else None
            try:
                if target is not None:
                    if memory.update_memory(target, content=text):
                        with lock:
                            acked[target] = text
                            maybe.pop(target, None)
                else:
                    memory_id = memory.add_memory(text, "episodic")
                    mine.append(memory_id)
                    with lock:
                        acked[memory_id] = text
            except HelloPgmemError as exc:
                refused.append(type(exc).__name__)
                if target is not None:
                    with lock:
                        maybe.setdefault(target, set()).add(text)
                time.sleep(0.1)
            i += 1
            if pause:
                time.sleep(pause)

    return [threading.Thread(target=write, args=(n,)) for n in range(count)]


def verify(
    db: Database,
    embedder: HashingEmbedder,
    user: str,
    acked: dict[uuid.UUID, str],
    maybe: dict[uuid.UUID, set[str]],
) -> dict[str, Any]:
    """Every acknowledged write there with its latest text (or a later one whose call failed at a
    crash but committed) and that text's vector."""
    with db.transaction(user) as conn:
        rows = {
            r[0]: (r[1], r[2])
            for r in conn.execute(
                "SELECT id, content, embedding FROM memories WHERE user_id = %s AND version_of IS NULL",
                (user,),
            )
        }
    missing = [i for i in acked if i not in rows]
    wrong_text = [i for i, text in acked.items() if i in rows and rows[i][0] not in {text, *maybe.get(i, ())}]
    no_vector = [i for i, (_, vector) in rows.items() if vector is None]
    stale = 0
    for content, vector in rows.values():
        if vector is not None:
            expected = embedder.encode_documents([content])[0]
            stale += int(float(vector.to_numpy() @ expected) < 0.9999)
    report = check_integrity(db)
    return {
        "acknowledged": len(acked),
        "missing": len(missing),
        "wrong_text": len(wrong_text),
        "without_vector": len(no_vector),
        "vector_of_another_text": stale,
        "check": report.text().splitlines()[-1] if report.ok else report.text(),
    }


def crash(kills: int, every: float) -> dict[str, Any]:
    embedder = HashingEmbedder()
    with ScratchServer.running(DevDB.from_env(), "queue_faults") as server:
        settings = server.new_database(
            "faults", embed="queue", connect_timeout_s=1, embedding_queue_lease_s=5, embedding_queue_poll_s=1
        )
        acked: dict[uuid.UUID, str] = {}
        maybe: dict[uuid.UUID, set[str]] = {}
        refused: list[str] = []
        stop = threading.Event()
        with Database(settings) as db:
            memory = Store(database=db, embedder=embedder).memory("crash", types=["episodic"])
            helper = threading.Thread(target=EmbeddingWorker(db, embedder).run, args=(stop,))
            threads = writers(memory, 3, stop, acked, refused, maybe)
            for thread in [*threads, helper]:
                thread.start()
            for _ in range(kills):
                time.sleep(every)
                kill_server(server)
                time.sleep(1.0)
                server.start()
            time.sleep(every)
            stop.set()
            for thread in [*threads, helper]:
                thread.join(60)
            started = time.perf_counter()
            Store(database=db, embedder=embedder).wait_for_embeddings(timeout=600, everyone=True)
            drained = time.perf_counter() - started
            result = verify(db, embedder, "crash", acked, maybe)
        return {
            "kills": kills,
            "refused_during_outages": len(refused),
            "drain_after_s": round(drained, 1),
            **result,
        }


def endpoint(down: float, rate: float) -> dict[str, Any]:
    from tests.fake_openai import FakeOpenAI, serve

    with (
        harness.fresh_database(embed="queue", embedding_queue_poll_s=1) as settings,
        serve(FakeOpenAI(dimension=64)) as fake,
    ):
        model = OpenAIEmbedder("fake-embed", base_url=fake.base_url, dimension=64, max_retries=0, timeout_s=5)
        acked: dict[uuid.UUID, str] = {}
        refused: list[str] = []
        stop = threading.Event()
        with Database(settings) as db:
            memory = Store(database=db, embedder=model).memory("outage", types=["episodic"])
            memory.add_memory("the first note, embedded before the outage", "episodic")
            memory.wait_for_embeddings(timeout=30)
            fake.fail_status = 503
            threads = writers(memory, 3, stop, acked, refused, pause=1 / rate)
            harness.run_for(threads, down, stop, join_s=30)
            with db.transaction("outage") as conn:
                row: Any = conn.execute(
                    "SELECT count(*), max(attempts), max(retry_at - now()) FROM memory_embedding_queue"
                ).fetchone()
            queued, attempts, wait = row
            fake.fail_status = None
            back = time.perf_counter()
            first = None
            while True:
                with db.transaction("outage") as conn:
                    left: Any = conn.execute("SELECT count(*) FROM memory_embedding_queue").fetchone()
                if first is None and left[0] < queued:
                    first = time.perf_counter() - back
                if not left[0] or time.perf_counter() - back > 900:
                    break
                time.sleep(0.1)
            embedded_after = time.perf_counter() - back
        backoff = min(
            settings.embedding_queue_retry_max_s,
            settings.embedding_queue_retry_s * 2 ** max(0, (attempts or 1) - 1),
        )
        return {
            "down_s": down,
            "writes_acknowledged": len(acked),
            "writes_refused": len(refused),
            "queued_at_return": queued,
            "most_failures_of_a_row": attempts,
            "longest_wait_left_at_return_s": round(wait.total_seconds(), 1) if wait else 0,
            "backoff_period_at_return_s": backoff,
            "first_embedded_after_return_s": round(first or 0, 1),
            "all_embedded_after_return_s": round(embedded_after, 1),
            "left": left[0],
        }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("scenario", nargs="?", choices=["crash", "endpoint", "both"], default="both")
    parser.add_argument("--kills", type=int, default=4)
    parser.add_argument("--every", type=float, default=4.0, help="seconds between kills")
    parser.add_argument("--down", type=float, default=60.0, help="seconds the endpoint answers 503")
    parser.add_argument(
        "--rate", type=float, default=10.0, help="writes a second of each of 3 writers, endpoint"
    )
    args = parser.parse_args()
    report: dict[str, Any] = {"machine": harness.machine()}
    if args.scenario in ("crash", "both"):
        report["crash"] = crash(args.kills, args.every)
        print(json.dumps(report["crash"], indent=2), flush=True)
    if args.scenario in ("endpoint", "both"):
        report["endpoint"] = endpoint(args.down, args.rate)
        print(json.dumps(report["endpoint"], indent=2), flush=True)
    RESULTS.mkdir(exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M")
    (RESULTS / f"queue-faults-{stamp}.json").write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
