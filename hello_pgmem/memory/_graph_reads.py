"""The knowledge-graph half of :class:`~hello_pgmem.memory.MemoryManager`: an entity's
neighbourhood, the path between two entities, a memory's entities, an entity's memories, and
read-only Cypher, each scoped to the manager's user and, where asked, to a time."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cached_property
from typing import Any
from uuid import UUID

from hello_pgmem.core.models import MemoryConfig, MemoryItem, check_limit
from hello_pgmem.db import Database
from hello_pgmem.graph.store import NOW, AsOf, EntityRef, Neighbourhood, PathStep
from hello_pgmem.memory import _ids
from hello_pgmem.memory._parts import MemoryParts
from hello_pgmem.memory._user_graph import UserGraph


class GraphReads:
    """What a manager reads of its user's knowledge graph."""

    db: Database
    config: MemoryConfig
    _parts: MemoryParts

    def graph_neighbourhood(
        self,
        entity: str,
        depth: int = 1,
        *,
        valid_at: datetime | str | None = None,
        known_at: datetime | str | None = None,
    ) -> Neighbourhood | None:
        """The entities within ``depth`` relations of ``entity`` and the relations among them, as they
        held at ``valid_at`` as known at ``known_at`` (each now by default); None when the user's
        graph has no such entity."""
        return self._user_graph.neighbourhood(entity, depth, AsOf.checked(valid_at, known_at) or NOW)

    def graph_path(
        self,
        source: str,
        target: str,
        max_depth: int = 4,
        *,
        valid_at: datetime | str | None = None,
        known_at: datetime | str | None = None,
    ) -> list[PathStep]:
        """The shortest chain of relations between two entities ([] when not connected), as they held
        at ``valid_at`` as known at ``known_at`` (each now by default)."""
        return self._user_graph.path(source, target, max_depth, AsOf.checked(valid_at, known_at) or NOW)

    def memory_entities(self, memory_id: UUID | str) -> list[EntityRef]:
        """The entities a memory mentions."""
        return self._user_graph.entities_of(_ids.as_uuid(memory_id))

    def entity_memories(
        self,
        entity: str,
        limit: int = 20,
        *,
        valid_at: datetime | str | None = None,
        known_at: datetime | str | None = None,
    ) -> list[MemoryItem]:
        """The memories that mention ``entity``: live, or as they held at ``valid_at`` as the store
        knew them at ``known_at``."""
        as_of = AsOf.checked(valid_at, known_at) or NOW
        return self._user_graph.memories_about(
            entity, check_limit(limit, self.config.max_search_limit), as_of
        )

    def cypher(
        self, query: str, params: dict[str, Any] | None = None, columns: Sequence[str] = ("result",)
    ) -> list[tuple[Any, ...]]:
        """Read-only Cypher that sees only this user's vertices and edges (docs/security.md)."""
        return self._user_graph.cypher(query, params, columns)

    @cached_property
    def _user_graph(self) -> UserGraph:
        return UserGraph(self.db, self._parts.graph)  # the graph store asks the database for AGE
