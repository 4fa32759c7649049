"""The knowledge graph of one user, read one transaction per question."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from hello_pgmem.core.errors import GraphError
from hello_pgmem.core.models import MemoryItem, check_entity_name
from hello_pgmem.db import Database
from hello_pgmem.graph.passthrough import read_cypher
from hello_pgmem.graph.store import NOW, AsOf, EntityRef, GraphStore, Neighbourhood, PathStep
from hello_pgmem.memory._rows import FIELDS, memory_from_row


class UserGraph:
    """Neighbourhoods, paths, a memory's entities, an entity's memories, and read-only Cypher."""

    def __init__(self, db: Database, graph: GraphStore) -> None:
        self.db = db
        self.graph = graph
        self.user_id = graph.user_id

    def neighbourhood(self, entity: str, depth: int = 1, as_of: AsOf = NOW) -> Neighbourhood | None:
        """The entities within ``depth`` relations of ``entity`` and the relations among them (None:
        no such entity)."""
        with self.db.transaction(self.user_id) as conn:
            return self.graph.neighbourhood(conn, check_entity_name(entity), depth, as_of=as_of)

    def path(self, source: str, target: str, max_depth: int = 4, as_of: AsOf = NOW) -> list[PathStep]:
        """The shortest chain of relations between two entities ([] when not connected)."""
        names = check_entity_name(source), check_entity_name(target, "target")
        with self.db.transaction(self.user_id) as conn:
            return self.graph.shortest_path(conn, *names, max_depth, as_of=as_of)

    def entities_of(self, memory_id: UUID) -> list[EntityRef]:
        with self.db.transaction(self.user_id) as conn:
            return self.graph.entities_of(conn, memory_id)

    def memories_about(self, entity: str, limit: int, as_of: AsOf = NOW) -> list[MemoryItem]:
        """The memories that mention ``entity``, most important first: live, or as of a time."""
        with self.db.transaction(self.user_id) as conn:
            rows = self.graph.memories_about(conn, check_entity_name(entity), limit, as_of)
        return [memory_from_row(self.user_id, FIELDS, row) for row in rows]

    def cypher(
        self, query: str, params: dict[str, Any] | None, columns: Sequence[str]
    ) -> list[tuple[Any, ...]]:
        """Read-only Cypher on this user's part of the AGE graph (``$user_id`` bound to the user)."""
        if self.graph.projection is None:
            raise GraphError(
                "Apache AGE is not installed in this database: the Cypher interface is "
                "unavailable (graph queries through SQL still work)"
            )
        return read_cypher(self.db, self.user_id, query, params, columns)
