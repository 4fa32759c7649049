"""Consolidation: moving important memories to a longer-lived type, atomically.

A moved memory keeps its id and timestamp, its importance is multiplied by 1.1 (capped at 1.0),
and its metadata records where it came from. The rows to move are read first (their contents are
embedded, or queued for the workers, and prepared by the target type, e.g. extracted into the
graph when it is semantic),
then moved in one transaction that only takes rows whose content is still what was read: a row
changed meanwhile stays for the next run. What the target writes besides the row (its graph)
is written in the same transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import MemoryType, check_memory_type
from hello_pgmem.memory import _queries as q
from hello_pgmem.memory._longterm import LongTermMemory
from hello_pgmem.memory._working import WorkingMemory

ORDER = {"working": 0, "episodic": 1, "perceptual": 1, "semantic": 2}


def check_direction(from_type: object, to_type: object) -> tuple[MemoryType, MemoryType]:
    """The (source, target) types of a consolidation, if memories may move that way."""
    source = check_memory_type(from_type, "from_type")
    target = check_memory_type(to_type, "to_type")
    if target == "working" or ORDER[target] <= ORDER[source] or "perceptual" in (source, target):
        raise InvalidInputError(
            "to_type",
            f"cannot consolidate {source} into {target}: use working → episodic, "
            "working → semantic or episodic → semantic",
        )
    return source, target


def _provenance(from_type: MemoryType, now: datetime) -> Jsonb:
    return Jsonb({"consolidated_from": from_type, "consolidated_at": now.isoformat()})


def _finish(conn: Any, target: LongTermMemory, moved: list[Any], prepared: dict[UUID, Any]) -> int:
    """Let the target write what belongs to the moved rows; return how many moved."""
    if moved:
        ids = [row[0] for row in moved]
        target.write_extras(conn, ids, [prepared[memory_id] for memory_id in ids], new=True)
    return len(moved)


def consolidate(source: object, target: object, threshold: float, now: datetime) -> int:
    """Move ``source``'s memories at or above ``threshold`` into ``target``'s type."""
    assert isinstance(target, LongTermMemory)
    if isinstance(source, WorkingMemory):
        return from_working(source, target, threshold, now)
    assert isinstance(source, LongTermMemory)
    return between_long_term(source, target, threshold, now)


def from_working(working: WorkingMemory, target: LongTermMemory, threshold: float, now: datetime) -> int:
    """Move the session's working memories at or above ``threshold`` into ``target``'s type."""
    candidates = working.consolidation_candidates(threshold)
    if not candidates:
        return 0
    contents = [content for _, content in candidates]
    made = target.embedder.encode_documents(contents) if target.embeds_now else [None] * len(contents)
    vectors = dict(zip((memory_id for memory_id, _ in candidates), made, strict=True))
    prepared = dict(zip(vectors, target.prepare(contents), strict=True))
    with target.transaction() as conn:
        taken = working.take(conn, candidates, threshold)
        if not taken:
            return 0
        params = {
            "user_id": working.user_id,
            "to_type": target.memory_type,
            "model": target.embedder.model_name,
            "provenance": _provenance("working", now),
            "ids": [row[0] for row in taken],
            "contents": [row[1] for row in taken],
            "importances": [row[2] for row in taken],
            "sessions": [row[3] for row in taken],
            "metadatas": [Jsonb(row[4]) for row in taken],
            "created": [row[5] for row in taken],
            "embeddings": [vectors[row[0]] for row in taken],
        }
        moved = conn.execute(q.MOVE_FROM_WORKING, params).fetchall()
        count = _finish(conn, target, moved, prepared)
    target.written()
    return count


def between_long_term(source: LongTermMemory, target: LongTermMemory, threshold: float, now: datetime) -> int:
    """Change the type of the long-term memories at or above ``threshold``; same id and vector."""
    params: dict[str, Any] = {
        "user_id": source.user_id,
        "from_type": source.memory_type,
        "to_type": target.memory_type,
        "threshold": threshold,
        "provenance": _provenance(source.memory_type, now),
    }
    with source.db.transaction(source.user_id) as conn:
        candidates = conn.execute(q.LONG_TERM_CANDIDATES, params).fetchall()
    if not candidates:
        return 0
    prepared = dict(
        zip((row[0] for row in candidates), target.prepare([row[1] for row in candidates]), strict=True)
    )
    params.update(ids=[row[0] for row in candidates], contents=[row[1] for row in candidates])
    with source.db.transaction(source.user_id) as conn:
        moved = conn.execute(q.BETWEEN_LONG_TERM, params).fetchall()
        return _finish(conn, target, moved, prepared)
