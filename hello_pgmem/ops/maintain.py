"""Maintenance, idempotent and safe to run from cron: expire, decay, purge, analyze.

It works across users, so it runs as the schema owner (or a superuser): under row-level security
the application role sees one user at a time and would find nothing to do.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hello_pgmem.db import Database
from hello_pgmem.graph.projection import AgeProjection
from hello_pgmem.graph.store import GraphStore
from hello_pgmem.models import utcnow

EXPIRE_WORKING = "DELETE FROM working_memories WHERE expires_at <= %(now)s"
USERS_OVER = """
SELECT user_id FROM memories WHERE forgotten_at IS NULL GROUP BY user_id HAVING count(*) > %(max)s
"""
DECAY = "SELECT apply_decay(%(user_id)s, %(max)s, %(now)s)"
PURGEABLE = """
SELECT user_id, array_agg(id) FROM memories
WHERE forgotten_at IS NOT NULL AND forgotten_at < %(cutoff)s
GROUP BY user_id
"""
PURGE = "DELETE FROM memories WHERE user_id = %(user_id)s AND id = ANY(%(ids)s)"
PURGE_LOG = "DELETE FROM retrieval_log WHERE logged_at < %(cutoff)s"
ANALYZE = "ANALYZE memories, working_memories, entities, mentions, relations, documents, chunks"


def maintain(
    db: Database, *, retention_days: float = 30, max_memories: int | None = None, analyze: bool = True
) -> dict[str, Any]:
    """Expire working memory, evict beyond ``max_memories`` per user, purge memories forgotten for
    more than ``retention_days`` (with their graph), trim the retrieval log, refresh statistics."""
    db.require_all_rows("maintain")
    now = utcnow()
    report: dict[str, Any] = {"expired_working": 0, "decayed": 0, "purged": 0, "log_rows_purged": 0}
    with db.transaction(all_rows=True) as conn:
        report["expired_working"] = conn.execute(EXPIRE_WORKING, {"now": now}).rowcount
    if max_memories is not None:
        with db.transaction(all_rows=True) as conn:
            users = [r[0] for r in conn.execute(USERS_OVER, {"max": max_memories}).fetchall()]
        for user in users:
            with db.transaction(user) as conn:
                row = conn.execute(DECAY, {"user_id": user, "max": max_memories, "now": now}).fetchone()
                report["decayed"] += int(row[0]) if row else 0
    with db.transaction(all_rows=True) as conn:
        purgeable = conn.execute(PURGEABLE, {"cutoff": now - timedelta(days=retention_days)}).fetchall()
    projection = AgeProjection(db.settings.graph_name) if db.graph_enabled else None
    for user, ids in purgeable:
        with db.transaction(user) as conn:
            GraphStore(user, projection).unlink(conn, ids)
            report["purged"] += conn.execute(PURGE, {"user_id": user, "ids": ids}).rowcount
    with db.transaction(all_rows=True) as conn:
        cutoff = now - timedelta(days=db.settings.retrieval_log_days)
        report["log_rows_purged"] = conn.execute(PURGE_LOG, {"cutoff": cutoff}).rowcount
    if analyze:
        with db.connection() as conn:
            conn.execute(ANALYZE)
    return report
