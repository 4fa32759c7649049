"""Commands over the embedding queue: ``worker`` makes the vectors of queued memories and chunks,
``status`` shows what waits."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import click

from hello_pgmem.cli.app import State, cli, emit, open_store


@cli.command()
@click.option("--threads", default=1, show_default=True, type=click.IntRange(1, 16), help="Worker threads.")
@click.option("--drain", is_flag=True, help="Stop once nothing is left to claim (for scripts).")
@click.pass_obj
def worker(state: State, threads: int, drain: bool) -> None:
    """Embed queued memories and chunks with the configured embedder until stopped (SIGTERM or
    Ctrl-C: the rows in hand are written or given back). Several workers, here or on other
    machines, share the queue."""
    from hello_pgmem.vectors import EmbeddingWorker

    stop = threading.Event()
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: stop.set())
    started = time.perf_counter()
    with open_store() as store:
        embedder = store.embedder
        store.db.ensure_embedding_model(embedder.model_name, embedder.dimension)
        if not state.json:
            click.echo(f"embedding worker for {embedder.model_name}, {threads} thread(s)", err=True)
        done = [0]

        def run() -> None:
            work = EmbeddingWorker(store.db, embedder)
            if not drain:
                work.run(stop)
                return
            while not stop.is_set():
                step = work.run_once(stop=stop)
                done[0] += step.embedded
                if not step.claimed:
                    return

        pool = [threading.Thread(target=run, name=f"worker-{n}") for n in range(threads)]
        for thread in pool:
            thread.start()
        for thread in pool:
            while thread.is_alive():
                thread.join(0.5)
    seconds = time.perf_counter() - started
    emit(state, {"embedded": done[0], "seconds": round(seconds, 1)}, f"stopped after {seconds:.1f} s")


@cli.command()
@click.pass_obj
def status(state: State) -> None:
    """The embedding queue: per kind (memory, chunk) and model, the rows that wait, those a worker
    holds, those that failed (with the next retry), the oldest; and --user's and --namespace's
    waiting rows with their last errors."""
    from hello_pgmem.vectors import pending, queue_errors, queue_status

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
