"""Changes the manager asks for: update a memory (its type found first), remove it with its earlier
versions and its graph, forget by a strategy, restore forgotten ones, clear every memory of the user."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import check_days, check_importance, check_strategy
from hello_pgmem.memory import _ids as ids
from hello_pgmem.memory import _queries as q
from hello_pgmem.memory._parts import MemoryParts, Store
from hello_pgmem.memory._versions import Change


def update(
    parts: MemoryParts,
    memory_id: UUID,
    content: str | None,
    importance: float | None,
    metadata: dict[str, Any] | None,
    change: Change,
) -> bool:
    """Change a memory of any type (or the memory of an earlier version's id); False when the user
    has none with this id."""
    with parts.db.transaction(parts.user_id) as conn:
        memory_id = ids.memory_of(conn, parts.user_id, memory_id)
        found = ids.locate(conn, parts.working, memory_id)
    if found is None:
        return False
    if found == "working":
        return parts.working.update(memory_id, content, importance, metadata)
    return parts.long_term(found).update(memory_id, content, importance, metadata, change=change)


def forget(
    stores: Sequence[Store], strategy: object, threshold: object, max_age_days: object, confirm: bool
) -> int:
    """Forget in each store by importance, age or capacity; how many. A forget that spares nothing
    (``importance_based`` with threshold 1, ``time_based`` with max_age_days 0) needs ``confirm``."""
    kind, floor = check_strategy(strategy), check_importance(threshold, "threshold")
    days = check_days(max_age_days)
    sweeping = (kind == "importance_based" and floor >= 1.0) or (kind == "time_based" and days == 0)
    if sweeping and confirm is not True:
        rule = "threshold 1" if kind == "importance_based" else "max_age_days 0"
        raise InvalidInputError(
            "confirm", f"must be true for a forget that would remove every memory ({kind} with {rule})"
        )
    return sum(store.forget(kind, floor, days) for store in stores)


def remove(parts: MemoryParts, memory_id: UUID) -> bool:
    """Delete a memory for good (or the memory of an earlier version's id), its earlier versions
    and what the graph holds of them."""
    if parts.working.remove(memory_id):
        return True
    with parts.db.transaction(parts.user_id) as conn:
        memory_id = ids.memory_of(conn, parts.user_id, memory_id)
        params = {"user_id": parts.user_id, "ids": [memory_id]}
        earlier = [row[0] for row in conn.execute(q.VERSION_IDS, params)]
        parts.graph.unlink(conn, [memory_id, *earlier])
        return conn.execute(q.DELETE, {"user_id": parts.user_id, "id": memory_id}).rowcount >= 1


def restore(
    parts: MemoryParts, types: Sequence[str], memory_ids: Sequence[UUID] | None, since: datetime | None
) -> int:
    """Bring forgotten long-term memories of ``types`` back (those named, or forgotten since
    ``since``, or all); how many (a named id that is no forgotten memory of the user restores
    nothing)."""
    params = {"user_id": parts.user_id, "types": list(types), "ids": memory_ids, "since": since}
    with parts.db.transaction(parts.user_id) as conn:
        return len(conn.execute(q.RESTORE, params).fetchall())


def clear_user(parts: MemoryParts) -> int:
    """Delete every memory of the user (all types and sessions, the graph, the access log)."""
    with parts.db.transaction(parts.user_id) as conn:
        parts.graph.clear(conn)
        conn.execute(q.CLEAR_ACCESSES, {"user_id": parts.user_id})
        long_term = conn.execute(q.CLEAR_USER, {"user_id": parts.user_id}).rowcount
        return long_term + parts.working.clear_user(conn)
