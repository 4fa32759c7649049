"""Maintenance, idempotent and safe to run from cron: expire, decay, purge, analyze.

It works across users, so it runs as the schema owner (or a superuser): under row-level security
the application role sees one user at a time and would find nothing to do.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hello_pgmem import memory as table
from hello_pgmem.core.models import utcnow
from hello_pgmem.db import Database
from hello_pgmem.db.retrieval_log import purge_log
from hello_pgmem.graph.projection import AgeProjection
from hello_pgmem.graph.store import GraphStore
from hello_pgmem.memory import apply_decay

ANALYZE = (
    "ANALYZE memories, memory_accesses, working_memories, entities, mentions, relations, documents, chunks"
)


def maintain(
    db: Database, *, retention_days: float = 30, max_memories: int | None = None, analyze: bool = True
) -> dict[str, Any]:
    """Fold the access log into the counters, expire working memory, forget expired LangGraph
    store items, evict beyond ``max_memories``
    per user, purge memories forgotten for more than ``retention_days`` (with their graph and
    their earlier versions) and versions retired for more than ``PGMEM_HISTORY_DAYS``, trim the
    retrieval log, refresh statistics."""
    db.require_all_rows("maintain")
    now = utcnow()
    report: dict[str, Any] = {
        "accesses_folded": 0,
        "expired_working": 0,
        "expired_items": 0,
        "decayed": 0,
        "purged": 0,
        "log_rows_purged": 0,
    }
    with db.transaction(all_rows=True) as conn:
        report["accesses_folded"] = table.fold_accesses(conn)
        report["expired_working"] = table.expire_working(conn, now)
        report["expired_items"] = table.sweep_expired(conn)
    if max_memories is not None:
        with db.transaction(all_rows=True) as conn:
            users = table.users_over(conn, max_memories)
        for user in users:
            with db.transaction(user) as conn:
                report["decayed"] += apply_decay(conn, user, max_memories, now)
    with db.transaction(all_rows=True) as conn:
        history_cutoff = now - timedelta(days=db.settings.history_days)
        purgeable = table.forgotten_before(conn, now - timedelta(days=retention_days), history_cutoff)
    projection = AgeProjection(db.settings.graph_name) if db.graph_enabled else None
    for user, ids in purgeable:
        with db.transaction(user) as conn:
            GraphStore(user, projection).unlink(conn, ids)
            report["purged"] += table.purge(conn, user, ids)
    with db.transaction(all_rows=True) as conn:
        report["log_rows_purged"] = purge_log(conn, now - timedelta(days=db.settings.retrieval_log_days))
    if analyze:
        with db.connection() as conn:
            conn.execute(ANALYZE)
    return report
