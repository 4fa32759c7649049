"""What a user holds: counts per type and the most important memories (for summaries)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hello_pgmem.core.models import LONG_TERM_TYPES, MemoryItem, MemoryStats, MemoryType, TypeStats
from hello_pgmem.memory import _queries as q
from hello_pgmem.memory._parts import MemoryParts
from hello_pgmem.memory._rows import FIELDS, memory_from_row


def important(
    parts: MemoryParts, types: Sequence[MemoryType], limit: int, min_importance: float
) -> list[MemoryItem]:
    """The most important live memories of ``types``, then the newest, at most ``limit``."""
    long_term = [t for t in types if t in LONG_TERM_TYPES]
    params = {"user_id": parts.user_id, "types": long_term, "limit": limit, "min_importance": min_importance}
    with parts.db.transaction(parts.user_id) as conn:
        rows = conn.execute(q.MOST_IMPORTANT, params).fetchall()
        found = [memory_from_row(parts.user_id, FIELDS, row) for row in rows]
        if "working" in types:
            found += parts.working.most_important(conn, limit, min_importance)
    found.sort(key=lambda item: (-item.importance, -item.timestamp.timestamp(), str(item.id)))
    return found[:limit]


def stats(parts: MemoryParts, by_type: Mapping[str, TypeStats]) -> MemoryStats:
    """The stats of a user's memory from each type's stats."""
    config = parts.config
    return MemoryStats(
        user_id=parts.user_id,
        enabled_types=[t.memory_type for t in by_type.values()],
        total_memories=sum(s.count for s in by_type.values()),
        memories_by_type=dict(by_type),
        config={
            "max_capacity": config.max_capacity,
            "importance_threshold": config.importance_threshold,
            "decay_factor": config.decay_factor,
        },
    )
