"""An embedding worker: makes the vectors of queued memories and chunks with one embedder.

A pass asks which users and namespaces have rows it may claim (``embedding_backlog``), takes the
one whose turn it is (:mod:`.turns`: the one its process did the least work for), claims what one
part of the embedder's batch holds of that scope's rows in a short transaction scoped to it
(``FOR UPDATE SKIP LOCKED``, a lease), embeds them outside any transaction, and writes their
vectors back in a short transaction of its own. A vector is written only for the text it was made
from; a part the embedder fails keeps its rows queued with the error (one scope's: no other
tenant's rows fail with it, nor see its error) and a retry time that doubles with each failure.
Several workers, in threads or processes, share a queue.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from hello_pgmem.core.errors import DatabaseTimeoutError, DatabaseUnavailableError, HelloPgmemError
from hello_pgmem.db import Conn, Database
from hello_pgmem.db.connections import connect
from hello_pgmem.embedding import Embedder
from hello_pgmem.embedding_queue import queries as q
from hello_pgmem.embedding_queue import turns
from hello_pgmem.embedding_queue.cache import cache_key, cache_vectors, embed_cached
from hello_pgmem.embedding_queue.priority import lower_priority
from hello_pgmem.embedding_queue.queries import Kind
from hello_pgmem.embedding_queue.texts import embedding_text

log = logging.getLogger(__name__)

CLAIM_ROWS = 64
"""Rows a wait claims at a time in one scope."""
NO_CHAR_LIMIT = 2**31 - 1
ALONE_AFTER = 2
"""A row that failed this often is embedded alone: one text the model refuses fails no others."""

_FAILING: dict[str, str] = {}
"""Per model, the model's failure the process last logged, until a part succeeds again: logged
once, not per part or per row; when the model answers again, the rows that failed with it are due
at once. A text failing on its own (embedded alone) while the model answers others is not the
model's failure."""
_ANSWERING: dict[str, bool] = {}
"""Per model, whether its last answer in this process was a success."""


@dataclass(frozen=True)
class Claimed:
    """A queued row in a worker's hands: which, at which generation, the text to embed, and the
    fingerprint of the row's text as claimed (kept with its vector)."""

    kind: Kind
    scope: str
    id: UUID
    generation: int
    attempts: int
    text: str
    fingerprint: bytes = b""


@dataclass
class Pass:
    """What one pass of a worker did."""

    claimed: int = 0
    embedded: int = 0
    failed: int = 0
    stale: int = 0
    """Rows whose text changed (or that were embedded by another hand) while in this worker's hands."""
    error: str | None = None
    """The embedder's last failure in this pass."""


def scoped(db: Database, kind: Kind, scope: str) -> AbstractContextManager[Conn]:
    """A transaction scoped to a memory's user or a chunk's namespace."""
    return db.transaction(scope) if kind == "memory" else db.transaction(namespace=scope)


class EmbeddingWorker:
    """Drains the embedding queue for one embedder's model (see the module docstring)."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        *,
        says_failures: bool = False,
        lane_chars: int | None = None,
        yields: bool = False,
    ) -> None:
        """``says_failures``: its caller tells of a failed part itself (a search's catch-up), so the
        log has it at INFO only. ``lane_chars``: a short lane, which claims only parts of at most
        that many characters (a scope whose longest waiting row is longer is the other workers').
        ``yields``: its thread runs at a lower priority (:mod:`.priority`), beside a short lane."""
        self.db = db
        self.embedder = embedder
        self.settings = db.settings
        self.says_failures = says_failures
        self.lane_chars = lane_chars
        self.yields = yields

    # ------------------------------------------------------------------ one pass

    def run_once(self, limit: int = CLAIM_ROWS, stop: threading.Event | None = None) -> Pass:
        """Claim one part of the due rows (at most ``limit`` rows, and what the embedder takes in
        one batch) of the scope whose turn it is: the one this process's workers did the least
        work for (start-time fair queuing over the characters embedded), then the longest waiting.
        Embed and store them."""
        model = self.embedder.model_name
        self.db.ensure_embedding_model(model, self.embedder.dimension)
        done = Pass()
        with self.db.connection() as conn:
            backlog = conn.execute(q.BACKLOG, {"model": model, "limit": turns.BACKLOG_SCOPES}).fetchall()
        claimed: list[Claimed] = []
        chars = min(self.lane_chars or self.embedder.batch_chars, self.embedder.batch_chars)
        for start, kind, scope in turns.in_turn(model, backlog):
            claimed = self.claim(
                kind,
                scope,
                min(limit, self.embedder.batch_texts),
                chars=chars,
                at_least_one=self.lane_chars is None,
            )
            if claimed:
                work = sum(min(len(row.text), self.embedder.batch_chars) for row in claimed)
                turns.served(model, kind, scope, start, work, backlog)
                break
        done.claimed = len(claimed)
        self.embed_and_store(claimed, done, stop)
        return done

    def claim(
        self,
        kind: Kind,
        scope: str,
        limit: int,
        fresh: bool = False,
        chars: int | None = None,
        at_least_one: bool = True,
    ) -> list[Claimed]:
        """Claim up to ``limit`` of a scope's due rows, the longest waiting first, and no more
        than fit in ``chars`` characters (but the first whatever its length, ``at_least_one``);
        ``fresh``: rows that never failed, whoever holds them (a search's catch-up)."""
        params = {
            "scope": scope,
            "model": self.embedder.model_name,
            "lease_s": self.settings.embedding_queue_lease_s,
            "limit": limit,
            "chars": NO_CHAR_LIMIT if chars is None else chars,
            "at_least_one": at_least_one,
        }
        statements = q.STATEMENTS[kind]
        with scoped(self.db, kind, scope) as conn:
            rows = conn.execute(statements.claim_fresh if fresh else statements.claim, params).fetchall()
            ids = [row[0] for row in rows]
            found = conn.execute(statements.texts, {"scope": scope, "ids": ids}).fetchall() if ids else []
        texts = {
            row_id: (embedding_text(kind, content, heading), fingerprint)
            for row_id, content, heading, fingerprint in found
        }
        return [
            Claimed(kind, scope, row_id, generation, attempts, *texts[row_id])
            for row_id, generation, attempts in rows
            if row_id in texts  # (always: a row stays while its queue row is claimed)
        ]

    def embed_and_store(self, claimed: Sequence[Claimed], done: Pass, stop: threading.Event | None) -> None:
        """Embed the claimed rows a part at a time and store each part; on ``stop``, or a store that
        times out on a writer's locks, give the rest back."""
        parts = list(in_parts(claimed, self.embedder))
        for number, part in enumerate(parts):
            if stop is not None and stop.is_set():
                self.release([row for rest in parts[number:] for row in rest])
                return
            try:
                vectors = self.vectors(part)
            except Exception as exc:  # the rows stay queued; a bug of the embedder must not stop the worker
                done.error = self.failed(part, exc)
                done.failed += len(part)
                continue
            try:
                stored = self.store(part, vectors)
            except DatabaseTimeoutError:  # a writer holds the rows: they are claimable again at once
                self.release([row for rest in parts[number:] for row in rest])
                raise
            done.embedded += stored
            done.stale += len(part) - stored
            _ANSWERING[self.embedder.model_name] = True
            failure = _FAILING.pop(self.embedder.model_name, None)
            if failure is not None:
                self.retry_failed(failure)

    def vectors(self, part: Sequence[Claimed]) -> list[Any]:
        """The part's vectors: a chunk's from its namespace's embedding cache when there, else the
        embedder's (cached by the store, with the chunk's vector)."""
        if part[0].kind == "chunk" and all(row.scope == part[0].scope for row in part):
            vectors, _ = embed_cached(
                self.db,
                self.embedder,
                [row.text for row in part],
                len(part),
                namespace=part[0].scope,
                keep=False,
            )
            return list(vectors)
        return list(self.embedder.encode_documents([row.text for row in part]))

    # ------------------------------------------------------------------ writing back

    def store(self, part: Sequence[Claimed], vectors: Sequence[Any]) -> int:
        """Write a part's vectors, each only while its row waits at the generation it was made from
        (a chunk's also to its namespace's embedding cache, in the same transaction: a chunk erased
        meanwhile leaves no vector of its text behind); how many were written."""
        written = 0
        for (kind, scope), rows in _by_scope(part, vectors):
            params = {
                "scope": scope,
                "model": self.embedder.model_name,
                "ids": [row.id for row, _ in rows],
                "generations": [row.generation for row, _ in rows],
                "embeddings": [vector for _, vector in rows],
                "fingerprints": [row.fingerprint or None for row, _ in rows],
            }
            statements = q.STATEMENTS[kind]
            with scoped(self.db, kind, scope) as conn:
                conn.execute(statements.lock_rows, params)
                stored = {row[0] for row in conn.execute(statements.store, params).fetchall()}
                if kind == "chunk" and stored:
                    self._cache(conn, scope, [(row, vector) for row, vector in rows if row.id in stored])
            written += len(stored)
        return written

    def _cache(self, conn: Conn, namespace: str, stored: Sequence[tuple[Claimed, Any]]) -> None:
        """Cache the stored chunks' vectors for their namespace, in the store's transaction."""
        keys = [cache_key(namespace, row.text) for row, _ in stored]
        cache_vectors(self.db, conn, self.embedder.model_name, keys, [vector for _, vector in stored])

    def retry_failed(self, error: str) -> None:
        """The model answers again after failing with ``error``: every row that failed with it is
        due now, not after its back-off (which may have grown to minutes during an outage)."""
        with self.db.connection() as conn:
            row = conn.execute(q.RETRY_NOW, {"model": self.embedder.model_name, "error": error}).fetchone()
        log.info(
            "embeddings with %s succeed again: %d failed rows are tried now",
            self.embedder.model_name,
            row[0] if row else 0,
        )

    def failed(self, part: Sequence[Claimed], exc: BaseException) -> str:
        """Keep a part's rows queued with the error, to be tried again after the back-off; the
        error as kept."""
        error = str(exc)[:1000] if isinstance(exc, HelloPgmemError) else f"{type(exc).__name__}: {exc}"[:1000]
        model = self.embedder.model_name
        # a text embedded alone that fails while the model answers others: its own failure
        its_own = len(part) == 1 and part[0].attempts >= ALONE_AFTER and _ANSWERING.get(model, False)
        if self.says_failures:
            log.info("embedding with %s failed (%s): the caller says so", model, error)
        elif its_own:
            log.info("embedding with %s failed for one text on its own (%s)", model, error)
        elif _FAILING.get(model) != error:
            log.warning(
                "embedding with %s failed (%s): %d rows stay queued and are tried again after %g s or more",
                self.embedder.model_name,
                error,
                len(part),
                self.settings.embedding_queue_retry_s,
            )
            _FAILING[model] = error
        if not its_own:
            _ANSWERING[model] = False
        for (kind, scope), rows in _by_scope(part):
            params = {
                "scope": scope,
                "ids": [row.id for row, _ in rows],
                "generations": [row.generation for row, _ in rows],
                "error": error,
                "base_s": self.settings.embedding_queue_retry_s,
                "cap_s": self.settings.embedding_queue_retry_max_s,
            }
            with scoped(self.db, kind, scope) as conn:  # the rows, then their queue rows: one order
                conn.execute(q.STATEMENTS[kind].lock_rows, params)
                conn.execute(q.STATEMENTS[kind].fail, params)
        return error

    def release(self, rows: Sequence[Claimed]) -> None:
        """Give claimed rows back to the queue at once (a worker that stops)."""
        for (kind, scope), group in _by_scope(rows):
            params = {
                "scope": scope,
                "ids": [r.id for r, _ in group],
                "generations": [r.generation for r, _ in group],
            }
            with scoped(self.db, kind, scope) as conn:  # the rows, then their queue rows: one order
                conn.execute(q.STATEMENTS[kind].lock_rows, params)
                conn.execute(q.STATEMENTS[kind].release, params)

    # ------------------------------------------------------------------ running

    def run(self, stop: threading.Event, wake: threading.Event | None = None) -> None:
        """Work until ``stop`` is set: a pass while there is work, else wait for a write's
        notification (LISTEN), ``wake``, or the poll interval."""
        listener: Conn | None = None
        pause = 0.0
        if self.yields:
            lower_priority()
        while not stop.is_set():
            try:
                if listener is None:
                    listener = self._listen()
                done = self.run_once(stop=stop)
                pause = 0.0
                if done.claimed:
                    continue
                self._wait(listener, stop, wake)
            except (DatabaseUnavailableError, DatabaseTimeoutError, psycopg.OperationalError) as exc:
                pause = min(30.0, max(1.0, pause * 2))
                log.warning("embedding worker: %s; trying again in %.0f s", exc, pause)
                if listener is not None:
                    listener.close()
                    listener = None
                stop.wait(pause)
        if listener is not None:
            listener.close()

    def _listen(self) -> Conn:
        """A connection of its own that hears the queue's channel."""
        conn = connect(self.db.settings, autocommit=True)
        channel = conn.execute(
            sql.SQL("SELECT {}.embedding_queue_channel()").format(sql.Identifier(self.settings.schema_name))
        ).fetchone()
        assert channel is not None
        conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(str(channel[0]))))
        return conn

    def _wait(self, listener: Conn, stop: threading.Event, wake: threading.Event | None) -> None:
        """Until a notification, ``wake`` or ``stop``, or the poll interval (rows whose retry time
        comes, and a lease that ends, are found by a pass)."""
        deadline = time.monotonic() + self.settings.embedding_queue_poll_s
        while not stop.is_set() and time.monotonic() < deadline:
            if wake is not None and wake.is_set():
                wake.clear()
                return
            for _ in listener.notifies(timeout=0.2, stop_after=1):
                return


def in_parts(claimed: Sequence[Claimed], embedder: Embedder) -> Iterator[list[Claimed]]:
    """Rows in parts of at most the embedder's batch (``batch_texts`` texts, ``batch_chars``
    characters); a row that failed ``ALONE_AFTER`` times or more in a part of its own."""
    part: list[Claimed] = []
    chars = 0
    for row in claimed:
        if row.attempts >= ALONE_AFTER:
            yield [row]
            continue
        if part and (len(part) >= embedder.batch_texts or chars + len(row.text) > embedder.batch_chars):
            yield part
            part, chars = [], 0
        part.append(row)
        chars += len(row.text)
    if part:
        yield part


def _by_scope(
    rows: Sequence[Claimed], vectors: Sequence[Any] | None = None
) -> Iterator[tuple[tuple[Kind, str], list[tuple[Claimed, Any]]]]:
    """The rows (with their vectors) grouped by kind and scope, in their first order."""
    groups: dict[tuple[Kind, str], list[tuple[Claimed, Any]]] = {}
    for index, row in enumerate(rows):
        groups.setdefault((row.kind, row.scope), []).append(
            (row, None if vectors is None else vectors[index])
        )
    yield from groups.items()
