"""The embedding workers a process runs in the background: per Database and model, threads
(``PGMEM_EMBEDDING_QUEUE_WORKERS``, 1 by default, and a short lane,
``PGMEM_EMBEDDING_QUEUE_SHORT_CHARS``) started by the first write that queues rows for that model,
and stopped when the Database closes or the interpreter exits, each after its current part of work
(what it holds and has not embedded goes back to the queue at once)."""

from __future__ import annotations

import atexit
import logging
import threading
import weakref

from hello_pgmem.db import Database
from hello_pgmem.embedding import Embedder
from hello_pgmem.embedding_queue.worker import EmbeddingWorker

log = logging.getLogger(__name__)

STOP_WAIT_S = 10.0
"""How long closing waits for a worker to finish its part of work."""


class BackgroundWorkers:
    """The background workers of one Database, by embedding model."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._lock = threading.Lock()
        self._threads: dict[str, list[threading.Thread]] = {}
        self._wake: dict[str, list[threading.Event]] = {}
        self._stop = threading.Event()

    def nudge(self, embedder: Embedder) -> None:
        """Rows were queued for ``embedder``'s model: start its workers if none run, wake them."""
        count = self.db.settings.embedding_queue_workers
        if count == 0 or self._stop.is_set():
            return
        model = embedder.model_name
        with self._lock:
            if model not in self._threads:
                workers = workers_of(self.db, embedder, count)
                self._wake[model] = [threading.Event() for _ in workers]
                self._threads[model] = [
                    threading.Thread(
                        target=self._run,
                        args=(worker, wake),
                        name=f"hello_pgmem-embed-{model}-{n}",
                        daemon=True,
                    )
                    for n, (worker, wake) in enumerate(zip(workers, self._wake[model], strict=True))
                ]
                for thread in self._threads[model]:
                    thread.start()
                log.info("%d embedding worker(s) started for %s", len(workers), model)
            for wake in self._wake[model]:
                wake.set()

    def running(self, model: str) -> bool:
        with self._lock:
            return any(thread.is_alive() for thread in self._threads.get(model, []))

    def _run(self, worker: EmbeddingWorker, wake: threading.Event) -> None:
        try:
            worker.run(self._stop, wake)
        except Exception:  # the thread ends; the rows stay queued for the next worker
            log.exception("an embedding worker stopped on an unexpected error")

    def stop(self, timeout: float = STOP_WAIT_S) -> None:
        """Stop every worker after its current part of work (waiting ``timeout`` at most)."""
        self._stop.set()
        with self._lock:
            threads = [thread for group in self._threads.values() for thread in group]
            for wakes in self._wake.values():
                for wake in wakes:
                    wake.set()
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(timeout)


def workers_of(db: Database, embedder: Embedder, count: int) -> list[EmbeddingWorker]:
    """``count`` workers for ``embedder``'s model and, unless ``PGMEM_EMBEDDING_QUEUE_SHORT_CHARS`` is 0, its
    short lane: a worker that takes only parts of that many characters at most, so that another
    tenant's short texts are embedded while a long text is (on a second core then; the other
    workers yield the cores to it, at a lower priority)."""
    lane = db.settings.embedding_queue_short_chars if count else 0
    workers = [EmbeddingWorker(db, embedder, yields=bool(lane)) for _ in range(count)]
    return workers + ([EmbeddingWorker(db, embedder, lane_chars=lane)] if lane else [])


_WORKERS: weakref.WeakKeyDictionary[Database, BackgroundWorkers] = weakref.WeakKeyDictionary()
_WORKERS_LOCK = threading.Lock()


def background(db: Database) -> BackgroundWorkers:
    """The background workers of ``db`` (made on first use, stopped when it closes)."""
    with _WORKERS_LOCK:
        workers = _WORKERS.get(db)
        if workers is None:
            workers = _WORKERS[db] = BackgroundWorkers(db)
            db.on_close(lambda: stop_workers(db))
        return workers


def stop_workers(db: Database) -> None:
    """Stop ``db``'s background workers (each after its current part of work); the next write that
    queues rows starts new ones."""
    with _WORKERS_LOCK:
        workers = _WORKERS.pop(db, None)
    if workers is not None:
        workers.stop()


def queued(db: Database, embedder: Embedder) -> None:
    """A write queued rows for ``embedder``: the process's workers embed them."""
    background(db).nudge(embedder)


@atexit.register
def _stop_all() -> None:
    with _WORKERS_LOCK:
        workers = list(_WORKERS.values())
    for each in workers:
        each.stop(timeout=2.0)
