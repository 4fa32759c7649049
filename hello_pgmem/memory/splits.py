"""Contents longer than the cap, split into consecutive memories (``add_memories(...,
split_long=True)``): between sentences, then clauses, then characters; each part keeps its
item's importance, metadata (with ``part`` and ``parts``) and time, and the batch keeps its order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hello_pgmem.rag.splitting import split_text


@dataclass
class Batch:
    """The arguments of a batch add, as the caller gave them."""

    contents: Any
    importance: Any
    metadata: Any
    timestamps: Any


def split_long(batch: Batch, max_chars: int) -> Batch:
    """``batch`` with every content over ``max_chars`` replaced by its parts. A batch whose
    arguments are malformed is returned as it is, for the batch's own checks to refuse."""
    contents = batch.contents
    if not isinstance(contents, list | tuple) or not all(isinstance(c, str) for c in contents):
        return batch
    parts = [split_text(c, max_chars, len) if len(c) > max_chars else [c] for c in contents]
    if all(len(pieces) == 1 for pieces in parts):
        return batch
    per_item = [batch.metadata, batch.timestamps]
    if isinstance(batch.importance, list | tuple):
        per_item.append(batch.importance)
    if any(v is not None and (not isinstance(v, list | tuple) or len(v) != len(contents)) for v in per_item):
        return batch

    def spread(values: Any) -> Any:
        if values is None or not isinstance(values, list | tuple):
            return values
        return [value for value, pieces in zip(values, parts, strict=True) for _ in pieces]

    metas = batch.metadata if batch.metadata is not None else [{}] * len(contents)
    if not all(isinstance(m, dict) for m in metas):
        return batch
    numbered = [
        {**meta, "part": k + 1, "parts": len(pieces)} if len(pieces) > 1 else meta
        for meta, pieces in zip(metas, parts, strict=True)
        for k in range(len(pieces))
    ]
    return Batch(
        [piece for pieces in parts for piece in pieces],
        spread(batch.importance),
        numbered,
        spread(batch.timestamps),
    )
