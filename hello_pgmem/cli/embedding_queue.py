"""Commands over the embedding queue: ``worker`` makes the vectors of queued memories and chunks,
``status`` shows what waits."""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

from hello_pgmem.cli.app import State, cli, emit, open_store
from hello_pgmem.cli.progress import EVERY_S, progress_line
from hello_pgmem.db import Database

if TYPE_CHECKING:
    from hello_pgmem.embedding import Embedder
    from hello_pgmem.embedding_queue import EmbeddingWorker

WORK_LEFT = 3
"""The exit status of ``worker --drain`` when it stopped with rows still waiting."""


@cli.command()
@click.option("--threads", default=1, show_default=True, type=click.IntRange(1, 16), help="Worker threads.")
@click.option("--drain", is_flag=True, help="Stop once nothing is left to claim (for scripts).")
@click.pass_obj
def worker(state: State, threads: int, drain: bool) -> int:
    """Embed queued memories and chunks with the configured embedder until stopped (SIGTERM or
    Ctrl-C: the rows in hand are written or given back). Several workers, here or on other
    machines, share the queue. With --drain: progress as it goes, and exit status 3 when rows
    still wait at the end (held by other workers, or failing until their retry time)."""
    stop = threading.Event()
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: stop.set())
    started = time.perf_counter()
    with open_store() as store:
        embedder = store.embedder
        store.db.ensure_embedding_model(embedder.model_name, embedder.dimension)
        embedded = Counter()

        def run(work: EmbeddingWorker) -> None:
            if not drain:
                work.run(stop)
                return
            while not stop.is_set():
                step = work.run_once(stop=stop)
                embedded.add(step.embedded)
                if not step.claimed:
                    return

        workers = started_workers(state, store.db, embedder, threads, drain)
        pool = [threading.Thread(target=run, args=(w,), name=f"worker-{n}") for n, w in enumerate(workers)]
        for thread in pool:
            thread.start()
        line = progress_line("embedded", "rows")
        while alive := [thread for thread in pool if thread.is_alive()]:
            if drain and not state.json:
                left = waiting(store.db, embedder.model_name).rows
                line(embedded.value, embedded.value + left)
            alive[0].join(EVERY_S)
        left_behind = waiting(store.db, embedder.model_name)
        if drain and not state.json:
            line.finish(embedded.value, embedded.value + left_behind.rows)
    seconds = time.perf_counter() - started
    payload: dict[str, Any] = {
        "embedded": embedded.value,
        "waiting": left_behind.rows,
        "seconds": round(seconds, 1),
    }
    text = f"stopped after {seconds:.1f} s"
    if drain:
        text = f"embedded {embedded.value:,}, {left_behind.rows:,} still waiting"
        text += f" ({left_behind.why(stop.is_set())})" if left_behind.rows else ""
        payload["why"] = left_behind.why(stop.is_set()) if left_behind.rows else None
    emit(state, payload, text)
    return WORK_LEFT if drain and left_behind.rows else 0


def started_workers(
    state: State, db: Database, embedder: Embedder, threads: int, drain: bool
) -> list[EmbeddingWorker]:
    """The command's workers, said on stderr: ``threads`` of them, and the short lane
    (``PGMEM_EMBEDDING_QUEUE_SHORT_CHARS``) unless it drains."""
    from hello_pgmem.embedding_queue import EmbeddingWorker
    from hello_pgmem.embedding_queue.background import workers_of

    if drain:
        workers = [EmbeddingWorker(db, embedder) for _ in range(threads)]
    else:
        workers = workers_of(db, embedder, threads)
    if not state.json:
        lane = (
            f" and a short lane of {db.settings.embedding_queue_short_chars:,} characters"
            if len(workers) > threads
            else ""
        )
        click.echo(f"embedding worker for {embedder.model_name}, {threads} thread(s){lane}", err=True)
    return workers


class Counter:
    """A count that several threads add to."""

    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()

    def add(self, amount: int) -> None:
        with self._lock:
            self.value += amount


@dataclass(frozen=True)
class LeftBehind:
    """The rows of a model still waiting: how many, held by a worker now, failing."""

    rows: int
    claimed: int
    failing: int
    next_retry: datetime | None

    def why(self, stopped: bool) -> str:
        """Why they still wait, in a few words."""
        reasons = ["stopped by a signal"] if stopped else []
        if self.claimed:
            reasons.append(f"{self.claimed:,} held by other workers")
        if self.failing:
            retry = f" until {self.next_retry.isoformat(timespec='seconds')}" if self.next_retry else ""
            reasons.append(f"{self.failing:,} failed and wait for their retry{retry}; hello-pgmem status")
        return "; ".join(reasons) or "queued after the last claim"


def waiting(db: Database, model: str) -> LeftBehind:
    """The queue's rows of ``model`` (or of any model) over every user and namespace."""
    from hello_pgmem.embedding_queue import queue_status

    rows = [row for row in queue_status(db) if row.model in (model, None)]
    retries = [row.next_retry for row in rows if row.next_retry is not None]
    return LeftBehind(
        sum(row.pending for row in rows),
        sum(row.claimed for row in rows),
        sum(row.failing for row in rows),
        min(retries, default=None),
    )


@cli.command()
@click.pass_obj
def status(state: State) -> None:
    """The embedding queue: per kind (memory, chunk) and model, the rows that wait, those a worker
    holds, those that failed (with the next retry), the oldest; and --user's and --namespace's
    waiting rows with their last errors."""
    from hello_pgmem.embedding_queue import pending, queue_errors, queue_status

    with open_store() as store:
        rows = queue_status(store.db)
        model = store.embedder.model_name
        mine = {"memory": pending(store.db, "memory", state.user, model).rows,
                "chunk": pending(store.db, "chunk", state.namespace, model).rows}  # fmt: skip
        errors = queue_errors(store.db, "memory", state.user) + queue_errors(
            store.db, "chunk", state.namespace
        )
    payload: dict[str, Any] = {"queue": rows, "user": state.user, "namespace": state.namespace, **mine}
    payload["errors"] = errors
    lines = [f"{'kind':<7} {'model':<32} {'waiting':>8} {'claimed':>8} {'failing':>8}  oldest / next retry"]
    for row in rows:
        when = row.oldest.isoformat(timespec="seconds") if row.oldest else "-"
        retry = f" / {row.next_retry.isoformat(timespec='seconds')}" if row.next_retry else ""
        counts = f"{row.pending:>8} {row.claimed:>8} {row.failing:>8}"
        lines.append(f"{row.kind:<7} {row.model or '(any)':<32} {counts}  {when}{retry}")
    if not rows:
        lines.append("nothing waits for a vector")
    lines.append(f"--user {state.user}: {mine['memory']} memories wait; --namespace {state.namespace}: "
                 f"{mine['chunk']} chunks wait")  # fmt: skip
    lines += [f"  failed {e['attempts']}x, next try {e['retry_at']}: {e['error']}" for e in errors]
    emit(state, payload, "\n".join(lines))
