"""Writes that a caller composes into one transaction of its own (``manager.transaction()``), as
the memory loop does with a turn: find the nearest memories, refresh one, add one, revise one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import numpy as np

from hello_pgmem.core.filters import MemoryFilter
from hello_pgmem.core.models import MemoryItem
from hello_pgmem.db import Conn
from hello_pgmem.memory import _ids as ids
from hello_pgmem.memory import _queries as q
from hello_pgmem.memory import _ranked_queries as rq
from hello_pgmem.memory._decay import apply_decay
from hello_pgmem.memory._parts import MemoryParts
from hello_pgmem.memory._versions import Change


@dataclass(frozen=True)
class Neighbour:
    """A live memory near a vector: its id, cosine similarity, content and type."""

    memory_id: UUID
    similarity: float
    content: str
    memory_type: str


class InTransaction:
    """The writes and reads of one user's memory inside a transaction of the caller's
    (``manager.transaction()``), as the memory loop composes a turn."""

    def __init__(self, parts: MemoryParts, conn: Conn) -> None:
        self.parts = parts
        self.conn = conn

    def nearest(
        self, vector: np.ndarray, pool: int, types: Sequence[str] = ("episodic", "semantic")
    ) -> list[Neighbour]:
        """The ``pool`` live memories of ``types`` nearest to ``vector``, nearest first."""
        params = {
            "user_id": self.parts.user_id,
            "model": self.parts.registered_embedder.model_name,
            "query": vector,
            "pool": pool,
            "filter": MemoryFilter(memory_types=list(types)),
        }
        rows = self.conn.execute(rq.NEAREST, params).fetchall()
        return [Neighbour(row[0], float(row[1]), row[2], row[3]) for row in rows]

    def refresh(self, memory_id: UUID, importance: float) -> None:
        """Count one access of a memory met again, raising its importance to at least ``importance``."""
        parts = self.parts
        params = {"user_id": parts.user_id, "id": memory_id, "now": parts.clock(), "importance": importance}
        self.conn.execute(q.REFRESH, params)

    def get(self, memory_id: UUID) -> MemoryItem | None:
        """The user's live memory ``memory_id`` of any type, or None."""
        return ids.get(self.conn, self.parts.working, memory_id)

    def insert(
        self,
        memory_type: str,
        content: str,
        importance: float,
        metadata: dict[str, Any],
        vector: np.ndarray,
        prepared: Any = None,
    ) -> UUID:
        """Add a long-term memory whose vector is known (and what belongs to it, e.g. its
        extraction as ``prepared``)."""
        store = self.parts.long_term(memory_type)
        item = self.parts.new_item(content, store.memory_type, importance, metadata, self.parts.clock())
        store.insert(self.conn, store.rows([item], [vector]), [prepared])
        return item.id

    def revise(
        self,
        memory_id: UUID,
        memory_type: str,
        content: str,
        importance: float,
        metadata: dict[str, Any],
        vector: np.ndarray,
        prepared: Any = None,
        change: Change | None = None,
    ) -> bool:
        """Replace a long-term memory's content (its vector known), importance and merge metadata;
        the old content is kept as an earlier version (``change`` says how they relate)."""
        store = self.parts.long_term(memory_type)
        return store.update_in(self.conn, memory_id, content, importance, metadata, vector, prepared, change)

    def known_entities(self, names: Sequence[str]) -> list[str]:
        """The names among ``names`` that are entities of the user's graph."""
        return self.parts.graph.known_entities(self.conn, names)

    def conflicting_memory(self, relations: Sequence[Any]) -> UUID | None:
        """A live memory asserting a single-valued relation that ``relations`` contradict, or None."""
        return self.parts.graph.conflicting_memory(self.conn, relations)

    def decay(self, max_memories: int) -> int:
        """Forget the user's memories least worth keeping beyond ``max_memories``; how many."""
        return apply_decay(self.conn, self.parts.user_id, max_memories, self.parts.clock())
