"""Decay: forgetting a user's memories least worth keeping beyond a maximum (SQL ``apply_decay``)."""

from __future__ import annotations

from datetime import datetime

from hello_pgmem.db import Conn
from hello_pgmem.memory import _queries as q


def apply_decay(conn: Conn, user_id: str, max_memories: int, now: datetime) -> int:
    """Forget the lowest ``retention_score`` memories beyond ``max_memories``; how many (caller's tx)."""
    row = conn.execute(
        q.APPLY_DECAY, {"user_id": user_id, "max_memories": max_memories, "now": now}
    ).fetchone()
    return int(row[0]) if row else 0
