"""A time limit for one call, seen by the work it starts: statements and long loops stop at it.

A server that answers a caller within ``seconds`` runs the call inside :func:`call_deadline`.
Every transaction started under it gets a ``statement_timeout`` of the time that is left (so the
database cancels a statement at the deadline), and loops that can run long (ingest, chunking,
embedding batches) call :func:`check_deadline`, so an abandoned call stops using the machine
instead of running on in its thread.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from hello_pgmem.core.errors import DatabaseTimeoutError

_deadline: ContextVar[float | None] = ContextVar("hello_pgmem_deadline", default=None)


class DeadlineExceededError(DatabaseTimeoutError):
    """The call's time limit passed; the work stopped there (a transaction in progress rolled back)."""


@contextmanager
def call_deadline(seconds: float) -> Iterator[None]:
    """Run the block under a limit of ``seconds`` (a tighter enclosing limit still holds)."""
    until = time.monotonic() + seconds
    outer = _deadline.get()
    token = _deadline.set(until if outer is None else min(outer, until))
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining_ms() -> int | None:
    """Milliseconds left under the current limit (at least 1), or None when there is none."""
    until = _deadline.get()
    if until is None:
        return None
    return max(1, int((until - time.monotonic()) * 1000))


def check_deadline() -> None:
    """Raise :class:`DeadlineExceededError` once the current limit has passed."""
    until = _deadline.get()
    if until is not None and time.monotonic() >= until:
        raise DeadlineExceededError("the call ran out of its time limit; the work stopped there")
