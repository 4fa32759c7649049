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
    batch: Sequence[Item], times: Sequence[datetime], max_chars: int
) -> tuple[list[Item], list[datetime]]:
    """A checked batch (``check_batch``'s items and their times) with every content over
    ``max_chars`` replaced by its parts."""
    items: list[Item] = []
    when: list[datetime] = []
    for (text, importance, meta), time in zip(batch, times, strict=True):
        pieces = split_text(text, max_chars, len) if len(text) > max_chars else [text]
        for number, piece in enumerate(pieces, 1):
            numbered = {**meta, "part": number, "parts": len(pieces)} if len(pieces) > 1 else meta
            items.append((piece, importance, numbered))
            when.append(time)
    if len(items) > MAX_BATCH:
        raise InvalidInputError("contents", f"must become at most {MAX_BATCH} memories once split")
    return items, when
