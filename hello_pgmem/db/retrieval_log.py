"""The optional retrieval log (``PGMEM_RETRIEVAL_LOG=on``): one row per search, in one statement.

This module owns every statement on ``retrieval_log``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from hello_pgmem.db import Conn, Database

LOG = """
INSERT INTO retrieval_log (user_id, kind, query, namespace, results, latency_ms)
VALUES (%(user_id)s, %(kind)s, %(query)s, %(namespace)s, %(results)s, %(latency_ms)s)
"""
PURGE = "DELETE FROM retrieval_log WHERE logged_at < %(cutoff)s"
ERASE_USER = "DELETE FROM retrieval_log WHERE user_id = %(user_id)s"
MAX_QUERY_CHARS = 2000


def log_retrieval(
    db: Database,
    user_id: str,
    kind: str,
    query: str,
    results: Sequence[tuple[Any, float | None]],
    latency_ms: float,
    namespace: str | None = None,
) -> None:
    """Record a search when the log is on (a no-op otherwise)."""
    if not db.settings.retrieval_log:
        return
    params = {
        "user_id": user_id,
        "kind": kind,
        "query": query[:MAX_QUERY_CHARS],
        "namespace": namespace,
        "results": Jsonb([{"id": str(i), "score": s} for i, s in results]),
        "latency_ms": latency_ms,
    }
    with db.transaction(user_id, pipeline=True) as conn:
        conn.execute(LOG, params)


def purge_log(conn: Conn, cutoff: datetime) -> int:
    """Delete every log row older than ``cutoff`` (maintenance; needs all rows)."""
    return conn.execute(PURGE, {"cutoff": cutoff}).rowcount


def erase_log(conn: Conn, user_id: str) -> int:
    """Delete a user's log rows (in the caller's transaction)."""
    return conn.execute(ERASE_USER, {"user_id": user_id}).rowcount
