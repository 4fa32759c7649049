"""Retry of transactions the server aborted to resolve a conflict (deadlock, serialization,
two single-valued relations at once, a lock waited for past its time).

PostgreSQL aborts one transaction of a deadlock (40P01) and, at REPEATABLE READ or above, one
of two conflicting writers (40001); the other commits and the aborted one is safe to run again,
since nothing of it was written. A statement that waited for a lock past ``PGMEM_LOCK_TIMEOUT_MS``
(55P03) was rolled back the same way, and is run again the same way. ``retry_transient`` re-runs
a whole public operation (each of its transactions is atomic), with a short jittered back-off,
``PGMEM_RETRIES`` times.
"""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable
from typing import Concatenate, ParamSpec, Protocol, TypeVar

import psycopg

from hello_pgmem.core.errors import DatabaseTimeoutError

log = logging.getLogger(__name__)

# serialization_failure, deadlock_detected; exclusion_violation: two writers gave one subject a
# single-valued relation at once (relations_one_target_at_a_time) without queueing on the
# subject's entity row, and the one refused, run again, closes the other's period instead
RETRYABLE = frozenset({"40001", "40P01", "23P01", "55P03"})


class _Retries(Protocol):
    @property
    def retries(self) -> int: ...


class _Configured(Protocol):
    @property
    def settings(self) -> _Retries: ...


class HasDatabase(Protocol):
    """An object whose ``db.settings.retries`` says how often to re-run (a Database's)."""

    @property
    def db(self) -> _Configured: ...


T = TypeVar("T")
P = ParamSpec("P")
S = TypeVar("S", bound=HasDatabase)


def is_retryable(exc: BaseException) -> bool:
    """A conflict the server resolved by rolling back: the driver's error, or ours made from it (a
    lock timeout is raised as DatabaseTimeoutError)."""
    cause = exc if isinstance(exc, psycopg.Error) else exc.__cause__
    return isinstance(cause, psycopg.Error) and cause.sqlstate in RETRYABLE


def retry_transient(method: Callable[Concatenate[S, P], T]) -> Callable[Concatenate[S, P], T]:
    """Decorate a method of an object with ``.db``: re-run it when the server aborted it to
    resolve a conflict; any other error, and the last conflict, propagate unchanged."""

    @functools.wraps(method)
    def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        retries = self.db.settings.retries
        for attempt in range(1, retries + 1):
            try:
                return method(self, *args, **kwargs)
            except (psycopg.Error, DatabaseTimeoutError) as exc:
                if not is_retryable(exc):
                    raise
                pause = min(1.0, 0.02 * 2**attempt) * random.uniform(0.5, 1.5)
                name, state = method.__qualname__, getattr(exc, "sqlstate", None) or "55P03"
                log.info(
                    "%s: SQLSTATE %s, retry %d of %d in %.0f ms", name, state, attempt, retries, pause * 1000
                )
                time.sleep(pause)
        return method(self, *args, **kwargs)  # the last attempt: whatever it raises propagates

    return wrapper
