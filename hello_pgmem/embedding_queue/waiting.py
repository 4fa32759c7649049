"""Reading the queue and waiting on it: what waits where, a search's catch-up on its own scope's
few queued rows, and ``wait_for_embeddings`` for callers that want every vector before going on."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hello_pgmem.core.errors import DatabaseTimeoutError, EmbeddingError, HelloPgmemError
from hello_pgmem.db import Conn, Database
from hello_pgmem.embedding import Embedder
from hello_pgmem.embedding_queue import queries as q
from hello_pgmem.embedding_queue.background import queued
from hello_pgmem.embedding_queue.queries import Kind
from hello_pgmem.embedding_queue.worker import CLAIM_ROWS, EmbeddingWorker, Pass, scoped

IDLE_WAIT_S = 0.1
"""How long a waiter sleeps while the rows left are in other workers' hands or not yet due."""


@dataclass(frozen=True)
class QueueStatus:
    """The embedding queue of one kind (memory, chunk) and model, over every user and namespace."""

    kind: str
    model: str | None
    pending: int
    claimed: int
    failing: int
    oldest: datetime | None
    next_retry: datetime | None


@dataclass(frozen=True)
class ScopeQueue:
    """One user's (memories) or namespace's (chunks) rows waiting for their vectors."""

    pending: int = 0
    failing: int = 0
    oldest: datetime | None = None
    next_retry: datetime | None = None
    last_error: str | None = None


@dataclass(frozen=True)
class Pending:
    """A scope's rows waiting for a vector of one model; ``fresh`` of them never failed; ``due``:
    a search embeds them itself before it ranks (the queue's ``pending`` statement decides)."""

    rows: int = 0
    fresh: int = 0
    due: bool = False


def queue_status(db: Database) -> list[QueueStatus]:
    """The whole queue, per kind and model (counts only)."""
    with db.connection() as conn:
        return [QueueStatus(*row) for row in conn.execute(q.STATUS).fetchall()]


def scope_queue(conn: Conn, kind: Kind, scope: str) -> ScopeQueue:
    """A scope's queue, read in the caller's transaction (scoped to it)."""
    row = conn.execute(q.SCOPE_QUEUE[kind], {"scope": scope}).fetchone()
    return ScopeQueue(*row) if row else ScopeQueue()


def pending_in(conn: Conn, kind: Kind, scope: str, model: str, most: int | None = None) -> Pending:
    """The scope's waiting rows, read in the caller's transaction (scoped to it); ``most``: the
    most rows a search embeds itself (None: it embeds none)."""
    text, params = pending_query(kind, scope, model, most)
    row = conn.execute(text, params).fetchone()
    return Pending(*row) if row else Pending()


def pending_query(kind: Kind, scope: str, model: str, most: int | None = None) -> tuple[str, dict[str, Any]]:
    """The statement (and its parameters) that counts a scope's waiting rows, in ``Pending``'s
    columns: for a caller that sends it with others, in a transaction scoped to ``scope``."""
    return q.STATEMENTS[kind].pending, {"scope": scope, "model": model, "most": most}


def pending(db: Database, kind: Kind, scope: str, model: str, most: int | None = None) -> Pending:
    with scoped(db, kind, scope) as conn:
        return pending_in(conn, kind, scope, model, most)


def queue_errors(db: Database, kind: Kind, scope: str, limit: int = 5) -> list[dict[str, Any]]:
    """The failing rows of a user (memories) or namespace (chunks): how often, when next, why."""
    with scoped(db, kind, scope) as conn:
        rows = conn.execute(q.SCOPE_ERRORS[kind], {"scope": scope, "limit": limit}).fetchall()
    return [
        {"kind": kind, "id": str(row[0]), "attempts": row[1], "retry_at": row[2].isoformat(), "error": row[3]}
        for row in rows
    ]


def queued_rows(conn: Conn, kind: Kind, scope: str) -> int:
    """How many rows of a user (memories) or namespace (chunks) wait in the queue, in the
    caller's transaction (an erase counts them; deleting their rows takes them out)."""
    row = conn.execute(q.QUEUED[kind], {"scope": scope}).fetchone()
    return int(row[0]) if row else 0


def catch_up(db: Database, embedder: Embedder, kind: Kind, scope: str) -> Pass:
    """Embed a scope's queued rows in the caller's thread when few wait (``PGMEM_SEARCH_CATCH_UP``
    rows, ``PGMEM_SEARCH_CATCH_UP_CHARS`` characters): a search then finds by meaning what was just
    written. Rows that failed before are left to the workers' back-off; rows a worker was claiming
    or storing at the claim's instant are waited for, then claimed again (a worker's lease does not
    keep them from the search). What it did."""
    worker = EmbeddingWorker(db, embedder, says_failures=True)
    done = Pass()
    chars = _catch_up_round(worker, kind, scope, done, 0)
    held = _fresh_left(db, embedder, kind, scope)
    if held and chars < db.settings.search_catch_up_chars and done.error is None:
        _await_rows(db, kind, scope, held)
        _catch_up_round(worker, kind, scope, done, chars)
    return done


def _catch_up_round(worker: EmbeddingWorker, kind: Kind, scope: str, done: Pass, chars: int) -> int:
    """One claim of the scope's fresh rows within the characters left, embedded and stored; the
    characters claimed so far."""
    settings = worker.settings
    left = settings.search_catch_up_chars - chars
    claimed = worker.claim(kind, scope, settings.search_catch_up, fresh=True, chars=left, at_least_one=False)
    done.claimed += len(claimed)
    worker.embed_and_store(claimed, done, None)
    return chars + sum(len(row.text) for row in claimed)


def _fresh_left(db: Database, embedder: Embedder, kind: Kind, scope: str) -> list[Any]:
    """The scope's rows that never failed and still wait (at most a catch-up's worth)."""
    params = {"scope": scope, "model": embedder.model_name, "limit": db.settings.search_catch_up}
    with scoped(db, kind, scope) as conn:
        return [row[0] for row in conn.execute(q.STATEMENTS[kind].fresh_left, params).fetchall()]


def _await_rows(db: Database, kind: Kind, scope: str, ids: Sequence[Any]) -> None:
    """Wait until no other transaction holds any of the rows, one row at a time (a lock timeout
    ends the wait: the search goes on without that row's vector)."""
    try:
        for row_id in ids:
            with scoped(db, kind, scope) as conn:
                conn.execute(q.STATEMENTS[kind].await_row, {"scope": scope, "id": row_id})
    except DatabaseTimeoutError:
        return


def search_catch_up(db: Database) -> int | None:
    """The most waiting rows a search of this store embeds itself (``PGMEM_SEARCH_CATCH_UP``);
    None in a store that may not write."""
    return None if db.settings.read_only else db.settings.search_catch_up


def waiting_for_search(
    db: Database, embedder: Embedder, kind: Kind, scope: str, counted: Pending | None = None
) -> tuple[int, str | None]:
    """What a search of a scope is told before it ranks: how many of its rows wait for a vector of
    ``embedder``'s model (``counted``: as the search already counted them), after the search
    embedded them itself when few wait (:func:`catch_up`), and why that failed, if it did (the
    search goes on without those vectors). The process's workers are woken for what still waits."""
    waiting = counted or pending(db, kind, scope, embedder.model_name, search_catch_up(db))
    failure = None
    if waiting.due:
        try:
            failure = catch_up(db, embedder, kind, scope).error
        except HelloPgmemError as exc:  # the database: the search says so and goes on
            failure = str(exc)
        waiting = pending(db, kind, scope, embedder.model_name)
    if waiting.rows and not db.settings.read_only:  # a read-only store only counts
        queued(db, embedder)  # a worker of this process takes them, if none does yet
    return waiting.rows, failure


Scope = tuple[Kind, str]
"""A memory user (``("memory", user_id)``) or a chunk namespace (``("chunk", namespace)``)."""


def wait_for_embeddings(
    db: Database,
    embedder: Embedder,
    scopes: Sequence[Scope] | None = None,
    *,
    timeout: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Work the queue in the caller's thread until no row of ``scopes`` (memory users or chunk
    namespaces; every one when None) waits for a vector of ``embedder``'s model; how many this call
    embedded. Rows other workers hold are waited for (a claim or a store that times out on their
    locks is tried again, until this call's own timeout); failing rows are tried again at their
    retry time. ``progress(done, left)`` after each part: ``done`` rows of the scopes have their
    vectors since the wait began, whoever made them, and ``left`` still wait. Past ``timeout``
    seconds an :class:`EmbeddingError` says how many rows still wait, and why."""
    wanted = None if scopes is None else list(scopes)
    worker = EmbeddingWorker(db, embedder)
    deadline = None if timeout is None else time.monotonic() + timeout
    embedded = done = total = 0
    while True:
        left = _left(db, embedder.model_name, wanted)
        done = max(done, total - left)  # rows queued meanwhile grow the total, not shrink done
        total = done + left
        if progress is not None:
            progress(done, left)
        if left == 0:
            return embedded
        if deadline is not None and time.monotonic() >= deadline:
            raise EmbeddingError(_still_waiting(db, left, wanted, timeout or 0.0))
        try:
            step = _one_pass(worker, wanted)
        except DatabaseTimeoutError:  # a claim or a store waited past its lock or statement
            step = Pass()  # timeout: others hold those rows, and this wait goes on until its own
        embedded += step.embedded
        if not step.claimed:
            time.sleep(IDLE_WAIT_S)


def _one_pass(worker: EmbeddingWorker, scopes: list[Scope] | None) -> Pass:
    """One pass of a wait: over every scope, or a part of each of ``scopes`` in turn."""
    if scopes is None:
        return worker.run_once()
    done = Pass()
    for kind, scope in scopes:
        claimed = worker.claim(kind, scope, CLAIM_ROWS)
        done.claimed += len(claimed)
        worker.embed_and_store(claimed, done, None)
    return done


def _left(db: Database, model: str, scopes: list[Scope] | None) -> int:
    if scopes is not None:
        return sum(pending(db, kind, scope, model).rows for kind, scope in scopes)
    return sum(s.pending for s in queue_status(db) if s.model in (model, None))


def _still_waiting(db: Database, left: int, scopes: list[Scope] | None, timeout: float) -> str:
    """Why a wait gave up: how many rows still wait, and the last error of a failing one."""
    reason = ""
    for kind, scope in scopes or []:
        with scoped(db, kind, scope) as conn:
            failing = conn.execute(q.SCOPE_ERRORS[kind], {"scope": scope, "limit": 1}).fetchall()
        if failing:
            reason = f"; the last failure: {failing[0][3]}"
            break
    if scopes is None and any(s.failing for s in queue_status(db)):
        reason = "; some failed and wait for their retry time (hello-pgmem status)"
    return f"{left} rows still wait for their vectors after {timeout:g} s{reason}"
