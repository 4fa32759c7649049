"""Contents longer than the cap, split into consecutive memories (``add_memories(...,
split_long=True)``): between sentences, then clauses, then characters; each part keeps its
item's importance, metadata (with ``part`` and ``parts``) and time, and the batch keeps its order."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import MAX_BATCH
from hello_pgmem.rag.splitting import split_text

MAX_PARTS = 50
"""The most memories one content may become: what bounds a content that is split."""

Item = tuple[str, float | None, dict[str, Any]]


def split_long(
    batch: Sequence[Item],
    times: Sequence[datetime],
    sessions: Sequence[str | None],
    max_chars: int | None,
) -> tuple[list[Item], list[datetime], list[str | None]]:
    """A checked batch (``check_batch``'s items, their times and sessions) with every content over
    ``max_chars`` replaced by its parts (None: the batch as it is)."""
    if max_chars is None:
        return list(batch), list(times), list(sessions)
    items: list[Item] = []
    when: list[datetime] = []
    within: list[str | None] = []
    for (text, importance, meta), time, session in zip(batch, times, sessions, strict=True):
        pieces = split_text(text, max_chars, len) if len(text) > max_chars else [text]
        for number, piece in enumerate(pieces, 1):
            numbered = {**meta, "part": number, "parts": len(pieces)} if len(pieces) > 1 else meta
            items.append((piece, importance, numbered))
            when.append(time)
            within.append(session)
    if len(items) > MAX_BATCH:
        raise InvalidInputError("contents", f"must become at most {MAX_BATCH} memories once split")
    return items, when, within
