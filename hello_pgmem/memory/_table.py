"""What other layers do to the memory tables, as functions of the caller's transaction: the
maintenance job, erasure, export and the graph rebuild. The statements stay private to the
memory package; a caller gets the access, never the SQL."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from hello_pgmem.db import Conn
from hello_pgmem.memory import _queries as q
from hello_pgmem.memory import _working as working


def fold_accesses(conn: Conn, user_id: str | None = None) -> int:
    """Move the access log of ``user_id`` (or everyone's: needs all rows) into the memories'
    counters; how many accesses."""
    row = conn.execute(q.FOLD_ACCESSES, {"user_id": user_id}).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def expire_working(conn: Conn, now: datetime) -> int:
    """Delete every user's working memory past its time to live (needs all rows)."""
    return working.expire_all(conn, now)


def users_over(conn: Conn, max_memories: int) -> list[str]:
    """The users with more than ``max_memories`` live memories (needs all rows)."""
    return [str(row[0]) for row in conn.execute(q.USERS_OVER, {"max": max_memories}).fetchall()]


def forgotten_before(conn: Conn, cutoff: datetime, history_cutoff: datetime) -> list[tuple[str, list[UUID]]]:
    """Each user's memories forgotten before ``cutoff`` with their earlier versions, and the
    versions retired before ``history_cutoff`` (needs all rows)."""
    params = {"cutoff": cutoff, "history_cutoff": history_cutoff}
    return [(str(user), list(ids)) for user, ids in conn.execute(q.PURGEABLE, params).fetchall()]


def purge(conn: Conn, user_id: str, memory_ids: list[UUID]) -> int:
    """Delete these memories of ``user_id`` for good; how many."""
    return conn.execute(q.PURGE, {"user_id": user_id, "ids": memory_ids}).rowcount


def erase_user(conn: Conn, user_id: str) -> dict[str, int]:
    """Delete every memory of ``user_id`` (its queued vectors with them), its working memory and
    its access log; rows per table."""
    conn.execute(q.LOCK_USER, {"user_id": user_id})
    return {
        "working_memories": conn.execute(working.CLEAR_USER, {"user_id": user_id}).rowcount,
        "memory_accesses": conn.execute(q.CLEAR_ACCESSES, {"user_id": user_id}).rowcount,
        "memories": conn.execute(q.CLEAR_USER, {"user_id": user_id}).rowcount,
    }


def semantic_users(conn: Conn, user_id: str | None = None) -> list[str]:
    """The users with semantic memories (only ``user_id``, when given)."""
    return [str(row[0]) for row in conn.execute(q.SEMANTIC_USERS, {"user_id": user_id}).fetchall()]


def semantic_ids(conn: Conn, user_id: str) -> list[str]:
    """The ids of ``user_id``'s semantic memories, in order."""
    return [str(row[0]) for row in conn.execute(q.SEMANTIC_IDS, {"user_id": user_id}).fetchall()]
