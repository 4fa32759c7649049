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

An update keeps the previous content, importance and time in ``metadata["history"]``. The
thresholds fit the hashing embedder (a punctuation change scores about 0.96, "喜欢" -> "很喜欢"
about 0.76, two different facts about one person about 0.4-0.6); set them for another model with
:class:`LoopConfig`.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, Field

from hello_pgmem.graph.normalize import normalize_name
from hello_pgmem.loop.extractor import ExtractedMemory
from hello_pgmem.memory.manager import MemoryManager

CONFLICTS = """
SELECT DISTINCT r.memory_id
FROM relations r
JOIN entities s ON s.user_id = r.user_id AND s.id = r.source_id
JOIN entities t ON t.user_id = r.user_id AND t.id = r.target_id
JOIN memories m ON m.user_id = r.user_id AND m.id = r.memory_id AND m.forgotten_at IS NULL
WHERE r.user_id = %(user_id)s AND (s.name_norm, r.relation_type) IN (
    SELECT * FROM unnest(%(sources)s::text[], %(types)s::text[]))
  AND NOT (s.name_norm, r.relation_type, t.name_norm) IN (
    SELECT * FROM unnest(%(sources)s::text[], %(types)s::text[], %(targets)s::text[]))
"""

NEAREST = """
SELECT c.id, c.vector_score, m.content, m.memory_type
FROM memory_candidates(%(user_id)s, %(model)s, %(query)s, 5, %(types)s) AS c
JOIN memories m ON m.user_id = %(user_id)s AND m.id = c.id
ORDER BY c.vector_score DESC
"""

_PUNCTUATION = re.compile(r"[\W_]+", re.UNICODE)


class LoopConfig(BaseModel):
    """Thresholds of the memory loop (see the module docstrings)."""

    duplicate_threshold: float = Field(default=0.90, ge=0, le=1)
    refine_threshold: float = Field(default=0.75, ge=0, le=1)
    history_limit: int = Field(default=20, ge=1, le=1000)
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

    def write(self, memory: ExtractedMemory) -> Decision:
        manager = self.manager
        kind = memory.memory_type
        nearest = self._nearest(memory.content)
        for memory_id, similarity, content, _ in nearest:
            if same_text(content, memory.content) or similarity >= self.config.duplicate_threshold:
                manager.refresh_memory(memory_id, memory.importance)
                return Decision(
                    action="duplicate",
                    memory_id=memory_id,
                    content=content,
                    reason="same text" if same_text(content, memory.content) else "near duplicate",
                    similarity=similarity,
                )
        conflict = self._conflict(memory)
        if conflict is not None:
            return self._revise(conflict, memory, "contradicts", None)
        names = [normalize_name(e.name) for e in memory.entities]
        for memory_id, similarity, content, memory_type in nearest:
            shares_entity = any(name and name in normalize_name(content) for name in names)
            if memory_type == kind and similarity >= self.config.refine_threshold and shares_entity:
                return self._revise(memory_id, memory, "refines", similarity)
        memory_id = manager.add_memory(
            memory.content,
            kind,
            memory.importance,
            {"kind": memory.kind, "source": "conversation"},
            extraction=memory.extraction() if kind == "semantic" else None,
        )
        return Decision(action="added", memory_id=memory_id, content=memory.content, reason=memory.kind)

    def _revise(
        self, memory_id: UUID, memory: ExtractedMemory, reason: str, similarity: float | None
    ) -> Decision:
        old = self.manager.get_memory(memory_id)
        self.manager.revise_memory(
            memory_id,
            memory.content,
            max(memory.importance, old.importance if old else 0),
            reason,
            self.config.history_limit,
        )
        return Decision(
            action="updated",
            memory_id=memory_id,
            content=memory.content,
            reason=reason,
            similarity=similarity,
            previous=old.content if old else None,
        )

    def _nearest(self, content: str) -> list[tuple[UUID, float, str, str]]:
        manager = self.manager
        embedder = manager.embedder
        manager.db.ensure_embedding_model(embedder.model_name, embedder.dimension)
        params = {
            "user_id": manager.user_id,
            "model": embedder.model_name,
            "query": embedder.encode_one(content),
            "types": ["episodic", "semantic"],
        }
        with manager.db.transaction(manager.user_id) as conn:
            rows = conn.execute(NEAREST, params).fetchall()
        return [(r[0], float(r[1]), r[2], r[3]) for r in rows]

    def _conflict(self, memory: ExtractedMemory) -> UUID | None:
        if memory.memory_type != "semantic" or not memory.relations:
            return None
        params = {
            "user_id": self.manager.user_id,
            "sources": [normalize_name(r.source) for r in memory.relations],
            "types": [r.type for r in memory.relations],
            "targets": [normalize_name(r.target) for r in memory.relations],
        }
        with self.manager.db.transaction(self.manager.user_id) as conn:
            row = conn.execute(CONFLICTS, params).fetchone()
        return None if row is None else row[0]
