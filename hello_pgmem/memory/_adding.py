"""Adding memories: a content checked, classified when asked, given its time, session and
importance, and stored by its type (one transaction; a batch in one transaction too)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import (
    MemoryType,
    check_batch,
    check_content,
    check_memory_type,
    check_metadata,
    check_session_id,
    check_timestamp,
    check_timestamps,
)
from hello_pgmem.graph.extracted import Extraction
from hello_pgmem.memory import _splits as splits
from hello_pgmem.memory._classify import classify
from hello_pgmem.memory._longterm import LongTermMemory
from hello_pgmem.memory._parts import MemoryParts


def add_one(
    parts: MemoryParts,
    enabled: Sequence[MemoryType],
    content: str,
    memory_type: str,
    importance: float | None,
    metadata: object,
    auto_classify: bool,
    extraction: Extraction | None,
    timestamp: datetime | str | None,
    session_id: str | None,
) -> UUID:
    """Store one memory (MemoryManager.add_memory) and return its id."""
    content = check_content(content, parts.config.max_content_chars)
    meta = own_metadata(metadata)
    kind = classify(content, meta) if auto_classify else check_memory_type(memory_type)
    if auto_classify and kind not in enabled:
        kind = "working" if "working" in enabled else enabled[0]
    when = parts.clock() if timestamp is None else check_timestamp(timestamp)
    if timestamp is not None and kind == "working":
        raise InvalidInputError("timestamp", "working memory lives from now on: give it no timestamp")
    store = parts.of_enabled(kind, enabled)
    item = parts.new_item(content, kind, importance, meta, when, check_session_id(session_id))
    if extraction is not None and isinstance(store, LongTermMemory) and kind == "semantic":
        return store.add_many([item], prepared=[extraction])[0]
    return store.add(item)


def add_batch(
    parts: MemoryParts,
    enabled: Sequence[MemoryType],
    contents: Sequence[str],
    memory_type: str,
    importance: float | Sequence[float] | None,
    metadata: Sequence[dict[str, Any]] | None,
    timestamps: Sequence[datetime | str] | None,
    split_long: bool,
    session_ids: Sequence[str | None] | None,
) -> list[UUID]:
    """Store memories of one long-term type in one transaction (MemoryManager.add_memories)."""
    cap = parts.config.max_content_chars
    limit = cap * splits.MAX_PARTS if split_long else cap
    kind, batch = check_batch(memory_type, contents, importance, metadata, limit)
    for _, _, meta in batch:
        own_metadata(meta)
    times = check_timestamps(timestamps, len(batch), parts.clock())
    sessions = check_sessions(session_ids, len(batch))
    batch, times, sessions = splits.split_long(batch, times, sessions, cap if split_long else None)
    store = parts.of_enabled(kind, enabled)
    assert isinstance(store, LongTermMemory)  # check_batch takes long-term types only
    items = [
        parts.new_item(text, kind, value, meta, when, session)
        for (text, value, meta), when, session in zip(batch, times, sessions, strict=True)
    ]
    return store.add_many(items)


def own_metadata(metadata: object) -> dict[str, Any]:
    """Checked metadata that does not pretend to set what an argument sets."""
    meta = check_metadata(metadata)
    if "session_id" in meta:
        raise InvalidInputError("metadata", "'session_id' is an argument (session_id=...), not metadata")
    return meta


def check_sessions(session_ids: Sequence[str | None] | None, count: int) -> list[str | None]:
    """One session (or None) per memory of a batch."""
    if session_ids is None:
        return [None] * count
    if isinstance(session_ids, str) or len(session_ids) != count:
        raise InvalidInputError("session_ids", f"must give one session (or None) per memory, {count} in all")
    return [check_session_id(s, "session_ids") for s in session_ids]
