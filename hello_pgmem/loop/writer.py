"""Storing extracted memories without duplicates, keeping the history of what changed.

For each new memory, in this order:

1. **Duplicate** — the same text once normalised (case, width, spaces, punctuation), or a cosine
   similarity of at least ``duplicate_threshold`` (0.90) with one of the user's closest memories:
   nothing is stored; the existing memory gets one more access and the higher importance.
2. **Contradiction** — a relation of the new memory has the same source entity and relation type
   as a relation of an existing semantic memory but another target (张三 —居住于→ 北京, then
   张三 —居住于→ 上海): the existing memory is updated to the new content.
3. **Refinement** — cosine similarity of at least ``refine_threshold`` (0.75) with an existing
   memory of the same type that mentions one of the new memory's entities: updated the same way.
4. Otherwise the memory is added.

An update keeps the previous content as an earlier version of the memory (docs/temporal.md). A turn's
memories, and the decay after them, are written in one transaction: a turn is stored whole or
not at all, and its later memories see its earlier ones. The thresholds fit the hashing embedder
(a punctuation change scores about 0.96, "喜欢" -> "很喜欢" about 0.76, two different facts about
one person about 0.4-0.6); set them for another model with :class:`LoopConfig`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any, Literal
from uuid import UUID

import numpy as np
from pydantic import BaseModel, Field

from hello_pgmem.graph.normalize import normalize_name
from hello_pgmem.loop.extractor import ExtractedMemory
from hello_pgmem.memory import Change, InTransaction, MemoryManager

NEIGHBOURS = 5
_PUNCTUATION = re.compile(r"[\W_]+", re.UNICODE)


class LoopConfig(BaseModel):
    """Thresholds of the memory loop (see the module docstrings)."""

    duplicate_threshold: float = Field(default=0.90, ge=0, le=1)
    refine_threshold: float = Field(default=0.75, ge=0, le=1)
    context_min_score: float = Field(default=0.15, ge=-1, le=2)
    context_limit: int = Field(default=8, ge=1, le=100)
    max_memories: int | None = Field(default=None, ge=1)


class Decision(BaseModel):
    """What happened to one extracted memory."""

    action: Literal["added", "duplicate", "updated"]
    memory_id: UUID
    content: str
    reason: str
    similarity: float | None = None
    previous: str | None = None


def same_text(a: str, b: str) -> bool:
    """Equal once case, width, spaces and punctuation are ignored."""

    def key(text: str) -> str:
        return _PUNCTUATION.sub("", unicodedata.normalize("NFKC", text).casefold())

    return key(a) == key(b)


class MemoryWriter:
    """Stores extracted memories for one user through a MemoryManager."""

    def __init__(self, manager: MemoryManager, config: LoopConfig | None = None) -> None:
        self.manager = manager
        self.config = config or LoopConfig()

    def write_turn(
        self, memories: Sequence[ExtractedMemory], max_memories: int | None = None
    ) -> tuple[list[Decision], int]:
        """Store a turn's memories, then forget beyond ``max_memories``, in one transaction.

        Returns the decision for each memory and how many memories decay forgot.
        """
        manager = self.manager
        vectors = (
            list(manager.registered_embedder.encode_documents([m.content for m in memories]))
            if memories
            else []
        )
        with manager.transaction() as conn:
            writes = manager.in_transaction(conn)
            decisions = [
                self._write(writes, memory, vector) for memory, vector in zip(memories, vectors, strict=True)
            ]
            evicted = 0
            if max_memories is not None:
                evicted = writes.decay(max_memories)
        return decisions, evicted

    def write(self, memory: ExtractedMemory) -> Decision:
        """Store one extracted memory (one transaction)."""
        return self.write_turn([memory])[0][0]

    def _write(self, writes: InTransaction, memory: ExtractedMemory, vector: np.ndarray) -> Decision:
        nearest = writes.nearest(vector, NEIGHBOURS)
        for near in nearest:
            if same_text(near.content, memory.content) or near.similarity >= self.config.duplicate_threshold:
                writes.refresh(near.memory_id, memory.importance)
                reason = "same text" if same_text(near.content, memory.content) else "near duplicate"
                return Decision(
                    action="duplicate",
                    memory_id=near.memory_id,
                    content=near.content,
                    reason=reason,
                    similarity=near.similarity,
                )
        relations = (
            [(r.source, r.type, r.target) for r in memory.relations]
            if memory.memory_type == "semantic"
            else []
        )
        conflict = writes.conflicting_memory(relations)
        if conflict is not None:
            return self._revise(writes, conflict, memory, vector, "contradicts", None)
        names = [normalize_name(e.name) for e in memory.entities]
        for near in nearest:
            shares_entity = any(name and name in normalize_name(near.content) for name in names)
            if (
                near.memory_type == memory.memory_type
                and near.similarity >= self.config.refine_threshold
                and shares_entity
            ):
                return self._revise(writes, near.memory_id, memory, vector, "refines", near.similarity)
        meta = {"kind": memory.kind, "source": "conversation"}
        prepared = self._prepared(memory, memory.memory_type)
        memory_id = writes.insert(
            memory.memory_type, memory.content, memory.importance, meta, vector, prepared
        )
        return Decision(action="added", memory_id=memory_id, content=memory.content, reason=memory.kind)

    def _revise(
        self,
        writes: InTransaction,
        memory_id: UUID,
        memory: ExtractedMemory,
        vector: np.ndarray,
        reason: str,
        similarity: float | None,
    ) -> Decision:
        """Replace a memory's content, keeping the previous one as an earlier version: a
        contradiction means the world changed now (the old fact held until this turn), a
        refinement that the store had it less exactly (a correction of what it believed)."""
        old = writes.get(memory_id)
        assert old is not None and old.memory_type != "working"
        importance = max(memory.importance, old.importance)
        prepared = self._prepared(memory, old.memory_type)
        if reason == "contradicts":
            change = Change(self.manager.clock(), reason=reason)
        else:
            change = Change(correction=True, reason=reason)
        writes.revise(memory_id, old.memory_type, memory.content, importance, {}, vector, prepared, change)
        return Decision(
            action="updated",
            memory_id=memory_id,
            content=memory.content,
            reason=reason,
            similarity=similarity,
            previous=old.content,
        )

    @staticmethod
    def _prepared(memory: ExtractedMemory, memory_type: str) -> Any:
        """What a memory of ``memory_type`` writes besides its row: the turn's own extraction."""
        return memory.extraction() if memory_type == "semantic" else None
