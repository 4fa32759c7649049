"""The AGE projection of the relational graph, written in the caller's transaction.

The relational tables (entities, mentions, relations) are the truth; when Apache AGE is installed
the same graph is mirrored into ``Entity``/``Memory`` vertices and ``MENTIONS``/``RELATED`` edges
so it can be queried with Cypher. Every call is one batched Cypher statement (``UNWIND`` over a
bound list), never one call per entity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import psycopg

from hello_pgmem.db.age import cypher

CREATE_MEMORY = "CREATE (:Memory {user_id: $user_id, id: $memory_id})"
CREATE_MEMORIES = "UNWIND $memory_ids AS mid CREATE (:Memory {user_id: $user_id, id: mid})"
CREATE_ENTITIES = (
    "UNWIND $entities AS e CREATE (:Entity {user_id: $user_id, id: e.id, name: e.name, type: e.type})"
)
RETYPE_ENTITIES = "UNWIND $entities AS e MATCH (n:Entity {user_id: $user_id, id: e.id}) SET n.type = e.type"
CREATE_MENTIONS = (
    "MATCH (m:Memory {user_id: $user_id, id: $memory_id}) UNWIND $entity_ids AS eid "
    "MATCH (e:Entity {user_id: $user_id, id: eid}) CREATE (m)-[:MENTIONS {user_id: $user_id}]->(e)"
)
CREATE_MENTION_PAIRS = (
    "UNWIND $pairs AS p MATCH (m:Memory {user_id: $user_id, id: p.memory_id}), "
    "(e:Entity {user_id: $user_id, id: p.entity_id}) CREATE (m)-[:MENTIONS {user_id: $user_id}]->(e)"
)
CREATE_RELATIONS = (
    "UNWIND $relations AS r "
    "MATCH (a:Entity {user_id: $user_id, id: r.source}), (b:Entity {user_id: $user_id, id: r.target}) "
    "CREATE (a)-[:RELATED {user_id: $user_id, type: r.type, memory_id: r.memory_id}]->(b)"
)
DELETE_RELATED = (
    "UNWIND $memory_ids AS mid MATCH ()-[r:RELATED {user_id: $user_id, memory_id: mid}]->() DELETE r"
)
DELETE_MENTIONS = (
    "UNWIND $memory_ids AS mid MATCH (:Memory {user_id: $user_id, id: mid})-[r:MENTIONS]->() DELETE r"
)
DELETE_MEMORIES = "UNWIND $memory_ids AS mid MATCH (m:Memory {user_id: $user_id, id: mid}) DETACH DELETE m"
DELETE_ENTITIES = "UNWIND $entity_ids AS eid MATCH (e:Entity {user_id: $user_id, id: eid}) DETACH DELETE e"
CLEAR_ENTITIES = "MATCH (e:Entity {user_id: $user_id}) DETACH DELETE e"
CLEAR_MEMORIES = "MATCH (m:Memory {user_id: $user_id}) DETACH DELETE m"
CLEAR_ALL = "MATCH (n) WHERE label(n) IN ['Entity', 'Memory'] DETACH DELETE n"

Conn = psycopg.Connection[Any]


class AgeProjection:
    """Mirror relational graph changes into the AGE graph ``graph``."""

    def __init__(self, graph: str) -> None:
        self.graph = graph

    def run(self, conn: Conn, query: str, params: Mapping[str, Any]) -> None:
        cypher(conn, self.graph, query, params, columns=("result",))

    def add_memory(
        self,
        conn: Conn,
        user_id: str,
        memory_id: str,
        new_entities: Sequence[Mapping[str, str]],
        retyped: Sequence[Mapping[str, str]],
        mentioned: Sequence[str],
        relations: Sequence[Mapping[str, str]],
        create_vertex: bool = True,
    ) -> None:
        """A memory vertex, its new entities, its MENTIONS and RELATED edges."""
        base = {"user_id": user_id, "memory_id": memory_id}
        if create_vertex:
            self.run(conn, CREATE_MEMORY, base)
        if new_entities:
            self.run(conn, CREATE_ENTITIES, {**base, "entities": list(new_entities)})
        if retyped:
            self.run(conn, RETYPE_ENTITIES, {**base, "entities": list(retyped)})
        if mentioned:
            self.run(conn, CREATE_MENTIONS, {**base, "entity_ids": list(mentioned)})
        if relations:
            self.run(conn, CREATE_RELATIONS, {**base, "relations": list(relations)})

    def unlink_memories(
        self, conn: Conn, user_id: str, memory_ids: Iterable[str], orphans: Iterable[str], keep_vertex: bool
    ) -> None:
        """Remove memories' edges (and vertices unless ``keep_vertex``), then orphaned entities."""
        ids = list(memory_ids)
        if not ids:
            return
        self.run(conn, DELETE_RELATED, {"user_id": user_id, "memory_ids": ids})
        if keep_vertex:
            self.run(
                conn,
                DELETE_MENTIONS,
                {"user_id": user_id, "memory_ids": ids},
            )
        else:
            self.run(conn, DELETE_MEMORIES, {"user_id": user_id, "memory_ids": ids})
        orphan_ids = list(orphans)
        if orphan_ids:
            self.run(conn, DELETE_ENTITIES, {"user_id": user_id, "entity_ids": orphan_ids})

    def create_vertices(
        self, conn: Conn, user_id: str, entities: Sequence[Mapping[str, str]], memory_ids: Sequence[str]
    ) -> None:
        """Entity and Memory vertices in bulk (for rebuilds)."""
        if entities:
            self.run(conn, CREATE_ENTITIES, {"user_id": user_id, "entities": list(entities)})
        if memory_ids:
            self.run(conn, CREATE_MEMORIES, {"user_id": user_id, "memory_ids": list(memory_ids)})

    def create_edges(
        self,
        conn: Conn,
        user_id: str,
        mentions: Sequence[Mapping[str, str]],
        relations: Sequence[Mapping[str, str]],
    ) -> None:
        """MENTIONS edges ({memory_id, entity_id}) and RELATED edges in bulk (for rebuilds)."""
        if mentions:
            self.run(conn, CREATE_MENTION_PAIRS, {"user_id": user_id, "pairs": list(mentions)})
        if relations:
            self.run(conn, CREATE_RELATIONS, {"user_id": user_id, "relations": list(relations)})

    def clear_user(self, conn: Conn, user_id: str) -> None:
        self.run(conn, CLEAR_MEMORIES, {"user_id": user_id})
        self.run(conn, CLEAR_ENTITIES, {"user_id": user_id})

    def clear_all(self, conn: Conn) -> None:
        self.run(conn, CLEAR_ALL, {})
