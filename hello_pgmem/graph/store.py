"""The knowledge graph of one user: relational truth, AGE projection, graph queries.

Writes take the caller's connection so they share its transaction: a memory, its vector, its
entities, mentions and relations and its AGE vertices are committed together or not at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg
from pydantic import BaseModel

from hello_pgmem.age import cypher as run_cypher
from hello_pgmem.age import write_clauses
from hello_pgmem.errors import GraphError, NotFoundError, ValidationError
from hello_pgmem.graph.extraction import Extraction
from hello_pgmem.graph.normalize import normalize_name
from hello_pgmem.graph.projection import AgeProjection

Conn = psycopg.Connection[Any]

# One statement: insert new entities, give MISC ones a better type, report which were new and
# which changed type (``before`` sees the rows as they were before the upsert).
UPSERT_ENTITIES = """
WITH input AS (
    SELECT * FROM unnest(%(names)s::text[], %(norms)s::text[], %(types)s::text[])
        AS n(name, name_norm, entity_type)
), before AS (
    SELECT name_norm, entity_type FROM entities
    WHERE user_id = %(user_id)s AND name_norm IN (SELECT name_norm FROM input)
), up AS (
    INSERT INTO entities AS e (user_id, id, name, name_norm, entity_type)
    SELECT %(user_id)s, gen_random_uuid(), name, name_norm, entity_type FROM input
    ORDER BY name_norm  -- one lock order for every writer: concurrent adds cannot deadlock here
    ON CONFLICT (user_id, name_norm) DO UPDATE
    SET entity_type = CASE WHEN e.entity_type = 'MISC' THEN EXCLUDED.entity_type ELSE e.entity_type END,
        updated_at = now()
    RETURNING e.id, e.name, e.name_norm, e.entity_type, (xmax = 0) AS inserted
)
SELECT up.id, up.name, up.name_norm, up.entity_type, up.inserted,
       NOT up.inserted AND before.entity_type IS DISTINCT FROM up.entity_type AS retyped
FROM up LEFT JOIN before USING (name_norm)
"""

INSERT_MENTIONS = """
INSERT INTO mentions (user_id, memory_id, entity_id)
SELECT %(user_id)s, %(memory_id)s, unnest(%(entity_ids)s::uuid[])
ON CONFLICT DO NOTHING
"""

INSERT_RELATIONS = """
INSERT INTO relations AS r (user_id, source_id, relation_type, target_id, memory_id)
SELECT %(user_id)s, x.source_id, x.relation_type, x.target_id, %(memory_id)s
FROM unnest(%(sources)s::uuid[], %(types)s::text[], %(targets)s::uuid[])
     AS x(source_id, relation_type, target_id)
ON CONFLICT (user_id, source_id, relation_type, target_id, memory_id) DO UPDATE
SET weight = r.weight + 1, updated_at = now()
"""

MENTIONED_BY = """
SELECT DISTINCT entity_id FROM mentions WHERE user_id = %(user_id)s AND memory_id = ANY(%(memory_ids)s)
"""
UNLINK = """
WITH r AS (DELETE FROM relations WHERE user_id = %(user_id)s AND memory_id = ANY(%(memory_ids)s))
DELETE FROM mentions WHERE user_id = %(user_id)s AND memory_id = ANY(%(memory_ids)s)
"""
DELETE_ORPHANS = """
DELETE FROM entities e
WHERE e.user_id = %(user_id)s AND e.id = ANY(%(entity_ids)s)
  AND NOT EXISTS (SELECT 1 FROM mentions m WHERE m.user_id = e.user_id AND m.entity_id = e.id)
RETURNING e.id
"""

NEIGHBOURHOOD = """
WITH RECURSIVE walk (entity_id, hops) AS (
    SELECT e.id, 0 FROM entities e WHERE e.user_id = %(user_id)s AND e.name_norm = %(name)s
    UNION
    SELECT r.to_id, w.hops + 1 FROM walk w
    JOIN relation_edges r ON r.user_id = %(user_id)s AND r.from_id = w.entity_id
    WHERE w.hops < %(depth)s
), reached AS (SELECT entity_id, min(hops) AS hops FROM walk GROUP BY entity_id LIMIT %(max_entities)s)
SELECT e.name, e.entity_type, r.hops FROM reached r
JOIN entities e ON e.user_id = %(user_id)s AND e.id = r.entity_id
ORDER BY r.hops, e.name
"""

NEIGHBOURHOOD_RELATIONS = """
SELECT s.name, r.relation_type, t.name, sum(r.weight)
FROM relations r
JOIN entities s ON s.user_id = r.user_id AND s.id = r.source_id
JOIN entities t ON t.user_id = r.user_id AND t.id = r.target_id
WHERE r.user_id = %(user_id)s AND s.name_norm = ANY(%(names)s) AND t.name_norm = ANY(%(names)s)
GROUP BY 1, 2, 3
ORDER BY 4 DESC, 1, 2, 3
"""

SHORTEST_PATH = """
WITH RECURSIVE bfs (entity_id, path, steps, depth) AS (
    SELECT e.id, ARRAY[e.id], ARRAY[]::text[], 0
    FROM entities e WHERE e.user_id = %(user_id)s AND e.name_norm = %(source)s
    UNION ALL
    SELECT r.to_id, b.path || r.to_id, b.steps || (r.relation_type || '|' || r.direction), b.depth + 1
    FROM bfs b
    JOIN relation_edges r ON r.user_id = %(user_id)s AND r.from_id = b.entity_id
    WHERE b.depth < %(max_depth)s AND NOT r.to_id = ANY(b.path)
      AND NOT EXISTS (SELECT 1 FROM entities g WHERE g.user_id = %(user_id)s
                      AND g.id = b.entity_id AND g.name_norm = %(target)s)
)
SELECT b.path, b.steps FROM bfs b
JOIN entities g ON g.user_id = %(user_id)s AND g.id = b.entity_id AND g.name_norm = %(target)s
ORDER BY b.depth
LIMIT 1
"""

ENTITY_NAMES = "SELECT id, name FROM entities WHERE user_id = %(user_id)s AND id = ANY(%(ids)s)"

ENTITIES_OF = """
SELECT e.name, e.entity_type FROM mentions m
JOIN entities e ON e.user_id = m.user_id AND e.id = m.entity_id
WHERE m.user_id = %(user_id)s AND m.memory_id = %(memory_id)s
ORDER BY e.name
"""

MEMORIES_ABOUT = """
SELECT mem.id, mem.memory_type, mem.content, mem.importance, mem.session_id, mem.modality,
       mem.metadata, mem.created_at
FROM entities e
JOIN mentions m ON m.user_id = e.user_id AND m.entity_id = e.id
JOIN memories mem ON mem.user_id = m.user_id AND mem.id = m.memory_id AND mem.forgotten_at IS NULL
WHERE e.user_id = %(user_id)s AND e.name_norm = %(name)s
ORDER BY mem.importance DESC, mem.created_at DESC
LIMIT %(limit)s
"""


class EntityRef(BaseModel):
    name: str
    entity_type: str
    hops: int = 0


class RelationRef(BaseModel):
    source: str
    relation_type: str
    target: str
    weight: float = 1.0


class Neighbourhood(BaseModel):
    entity: str
    entities: list[EntityRef]
    relations: list[RelationRef]


class PathStep(BaseModel):
    source: str
    relation_type: str
    target: str


@dataclass
class GraphWrite:
    """What a memory's extraction added: for the projection and for reports."""

    entity_ids: list[str]
    new_entities: list[dict[str, str]]
    relations: list[dict[str, str]]


class GraphStore:
    """The user's graph: relational writes (with their AGE projection) and graph queries."""

    def __init__(self, user_id: str, projection: AgeProjection | None) -> None:
        self.user_id = user_id
        self.projection = projection

    # ------------------------------------------------------------------ writes (caller's tx)

    def write(
        self, conn: Conn, memory_id: UUID, extraction: Extraction, create_vertex: bool = True
    ) -> GraphWrite:
        """Store a memory's entities, mentions and relations, and project them.

        ``create_vertex=False`` when the memory's AGE vertex exists already (re-extraction).
        """
        entity_ids: dict[str, str] = {}
        new_entities: list[dict[str, str]] = []
        retyped: list[dict[str, str]] = []
        if extraction.entities:
            rows = conn.execute(
                UPSERT_ENTITIES,
                {
                    "user_id": self.user_id,
                    "names": [e.name for e in extraction.entities],
                    "norms": [normalize_name(e.name) for e in extraction.entities],
                    "types": [e.type for e in extraction.entities],
                },
            ).fetchall()
            for entity_id, name, norm, kind, inserted, changed in rows:
                entity_ids[norm] = str(entity_id)
                if inserted:
                    new_entities.append({"id": str(entity_id), "name": name, "type": kind})
                elif changed:
                    retyped.append({"id": str(entity_id), "type": kind})
            conn.execute(
                INSERT_MENTIONS,
                {"user_id": self.user_id, "memory_id": memory_id, "entity_ids": list(entity_ids.values())},
            )
        relations = [
            {
                "source": entity_ids[normalize_name(r.source)],
                "type": r.type,
                "target": entity_ids[normalize_name(r.target)],
                "memory_id": str(memory_id),
            }
            for r in extraction.relations
        ]
        if relations:
            conn.execute(
                INSERT_RELATIONS,
                {
                    "user_id": self.user_id,
                    "memory_id": memory_id,
                    "sources": [r["source"] for r in relations],
                    "types": [r["type"] for r in relations],
                    "targets": [r["target"] for r in relations],
                },
            )
        if self.projection is not None:
            self.projection.add_memory(
                conn,
                self.user_id,
                str(memory_id),
                new_entities,
                retyped,
                list(entity_ids.values()),
                relations,
                create_vertex,
            )
        return GraphWrite(list(entity_ids.values()), new_entities, relations)

    def unlink(self, conn: Conn, memory_ids: Sequence[UUID], keep_vertex: bool = False) -> list[UUID]:
        """Remove memories' mentions and relations and entities left with no memory.

        Call before deleting the memories (or before re-extracting them, ``keep_vertex=True``).
        Returns the ids of the entities removed.
        """
        params = {"user_id": self.user_id, "memory_ids": list(memory_ids)}
        mentioned = [row[0] for row in conn.execute(MENTIONED_BY, params).fetchall()]
        conn.execute(UNLINK, params)
        orphans: list[UUID] = []
        if mentioned:
            orphans = [
                row[0]
                for row in conn.execute(
                    DELETE_ORPHANS, {"user_id": self.user_id, "entity_ids": mentioned}
                ).fetchall()
            ]
        if self.projection is not None:
            self.projection.unlink_memories(
                conn, self.user_id, [str(m) for m in memory_ids], [str(o) for o in orphans], keep_vertex
            )
        return orphans

    def clear(self, conn: Conn) -> None:
        """Remove this user's AGE vertices (the relational rows go with the user's memories)."""
        if self.projection is not None:
            self.projection.clear_user(conn, self.user_id)

    # ------------------------------------------------------------------ queries

    def neighbourhood(self, conn: Conn, name: str, depth: int = 1, max_entities: int = 500) -> Neighbourhood:
        if not 1 <= depth <= 3:
            raise ValidationError("depth", "must be between 1 and 3")
        norm = normalize_name(name)
        rows = conn.execute(
            NEIGHBOURHOOD,
            {"user_id": self.user_id, "name": norm, "depth": depth, "max_entities": max_entities},
        ).fetchall()
        if not rows:
            raise NotFoundError(f"no entity {name!r} in this user's graph")
        entities = [EntityRef(name=n, entity_type=t, hops=h) for n, t, h in rows]
        names = [normalize_name(e.name) for e in entities]
        relations = [
            RelationRef(source=s, relation_type=r, target=t, weight=float(w))
            for s, r, t, w in conn.execute(
                NEIGHBOURHOOD_RELATIONS, {"user_id": self.user_id, "names": names}
            ).fetchall()
        ]
        return Neighbourhood(entity=rows[0][0], entities=entities, relations=relations)

    def shortest_path(self, conn: Conn, source: str, target: str, max_depth: int = 4) -> list[PathStep]:
        """The fewest relations between two entities (either direction); [] when unconnected."""
        if not 1 <= max_depth <= 6:
            raise ValidationError("max_depth", "must be between 1 and 6")
        row = conn.execute(
            SHORTEST_PATH,
            {
                "user_id": self.user_id,
                "source": normalize_name(source),
                "target": normalize_name(target),
                "max_depth": max_depth,
            },
        ).fetchone()
        if row is None:
            return []
        path, steps = row
        names = dict(conn.execute(ENTITY_NAMES, {"user_id": self.user_id, "ids": path}).fetchall())
        result = []
        for i, step in enumerate(steps):
            relation, direction = step.rsplit("|", 1)
            a, b = names[path[i]], names[path[i + 1]]
            result.append(
                PathStep(source=a, relation_type=relation, target=b)
                if direction == "out"
                else PathStep(source=b, relation_type=relation, target=a)
            )
        return result

    def entities_of(self, conn: Conn, memory_id: UUID) -> list[EntityRef]:
        rows = conn.execute(ENTITIES_OF, {"user_id": self.user_id, "memory_id": memory_id}).fetchall()
        return [EntityRef(name=n, entity_type=t) for n, t in rows]

    def memories_about(self, conn: Conn, name: str, limit: int = 20) -> list[Any]:
        """Rows of the live memories that mention the entity, most important first."""
        params = {"user_id": self.user_id, "name": normalize_name(name), "limit": limit}
        return list(conn.execute(MEMORIES_ABOUT, params).fetchall())

    def cypher(
        self,
        conn: Conn,
        query: str,
        params: dict[str, Any] | None = None,
        columns: Iterable[str] = ("result",),
    ) -> list[tuple[Any, ...]]:
        """Run Cypher on the user's graph; ``$user_id`` is bound to this user and must be used."""
        if self.projection is None:
            raise GraphError(
                "Apache AGE is not installed in this database: the Cypher interface is "
                "unavailable (graph queries through SQL still work)"
            )
        if "$user_id" not in query:
            raise ValidationError(
                "query", "must filter by $user_id (e.g. MATCH (e:Entity {user_id: $user_id}))"
            )
        writes = write_clauses(query)
        if writes:
            raise ValidationError(
                "query",
                f"must only read the graph, found {', '.join(writes)} (the graph is a projection "
                "of the relational tables, written by the library)",
            )
        bound = {**(params or {}), "user_id": self.user_id}
        return run_cypher(conn, self.projection.graph, query, bound, tuple(columns))
