"""The knowledge graph of one user: relational truth, AGE projection, graph queries.

Writes take the caller's connection so they share its transaction: a memory, its vector, its
entities, mentions and relations and its AGE vertices are committed together or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import check_timestamp
from hello_pgmem.db import Conn
from hello_pgmem.graph import queries as g
from hello_pgmem.graph.extracted import Extraction
from hello_pgmem.graph.normalize import normalize_name
from hello_pgmem.graph.projection import AgeProjection


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


@dataclass(frozen=True)
class AsOf:
    """When a question is asked of: the world at ``valid_at``, as the store knew it at
    ``known_at`` (each now when None)."""

    valid_at: datetime | None = None
    known_at: datetime | None = None

    @classmethod
    def checked(cls, valid_at: object, known_at: object) -> AsOf | None:
        """The times a caller gave, each checked (InvalidInputError names it); None for neither."""
        if valid_at is None and known_at is None:
            return None
        return cls(
            None if valid_at is None else check_timestamp(valid_at, "valid_at"),
            None if known_at is None else check_timestamp(known_at, "known_at"),
        )

    def params(self) -> dict[str, datetime | None]:
        return {"valid_at": self.valid_at, "known_at": self.known_at}


NOW = AsOf()
"""The current truth as currently known."""
MAX_NEIGHBOURHOOD_DEPTH = 3


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

        Long because the entities, mentions, relations and their projection are one write, in the caller's
        transaction.
        """
        entity_ids: dict[str, str] = {}
        new_entities: list[dict[str, str]] = []
        retyped: list[dict[str, str]] = []
        if extraction.entities:
            rows = conn.execute(
                g.UPSERT_ENTITIES,
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
                g.INSERT_MENTIONS,
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
            params = {
                "user_id": self.user_id,
                "memory_id": memory_id,
                "sources": [r["source"] for r in relations],
                "types": [r["type"] for r in relations],
                "targets": [r["target"] for r in relations],
            }
            conn.execute(g.CLOSE_SINGLE_VALUED, params)
            conn.execute(g.RETIRE_SAME_START, params)
            conn.execute(g.INSERT_RELATIONS, params)
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
        mentioned = [row[0] for row in conn.execute(g.MENTIONED_BY, params).fetchall()]
        conn.execute(g.UNLINK, params)
        orphans: list[UUID] = []
        if mentioned:
            orphans = [
                row[0]
                for row in conn.execute(
                    g.DELETE_ORPHANS, {"user_id": self.user_id, "entity_ids": mentioned}
                ).fetchall()
            ]
        if self.projection is not None:
            self.projection.unlink_memories(
                conn, self.user_id, [str(m) for m in memory_ids], [str(o) for o in orphans], keep_vertex
            )
        return orphans

    def clear(self, conn: Conn) -> int:
        """Remove this user's whole graph and its AGE vertices; return how many entities."""
        if self.projection is not None:
            self.projection.clear_user(conn, self.user_id)
        return conn.execute(g.CLEAR_USER, {"user_id": self.user_id}).rowcount

    # ------------------------------------------------------------------ queries

    def neighbourhood(
        self,
        conn: Conn,
        name: str,
        depth: int = 1,
        max_entities: int = 500,
        as_of: AsOf = NOW,
    ) -> Neighbourhood | None:
        """The entities within ``depth`` relations of ``name`` and the relations among them, as
        they held at ``as_of`` (now, as now known, by default); None when there is no such entity."""
        if not 1 <= depth <= MAX_NEIGHBOURHOOD_DEPTH:
            raise InvalidInputError("depth", f"must be between 1 and {MAX_NEIGHBOURHOOD_DEPTH}")
        norm = normalize_name(name)
        clocks = as_of.params()
        rows = conn.execute(
            g.NEIGHBOURHOOD,
            {"user_id": self.user_id, "name": norm, "depth": depth, "max_entities": max_entities, **clocks},
        ).fetchall()
        if not rows:
            return None
        entities = [EntityRef(name=n, entity_type=t, hops=h) for n, t, h in rows]
        names = [normalize_name(e.name) for e in entities]
        relations = [
            RelationRef(source=s, relation_type=r, target=t, weight=float(w))
            for s, r, t, w in conn.execute(
                g.NEIGHBOURHOOD_RELATIONS, {"user_id": self.user_id, "names": names, **clocks}
            ).fetchall()
        ]
        return Neighbourhood(entity=rows[0][0], entities=entities, relations=relations)

    def shortest_path(
        self,
        conn: Conn,
        source: str,
        target: str,
        max_depth: int = 4,
        max_visited: int = 100_000,
        as_of: AsOf = NOW,
    ) -> list[PathStep]:
        """The fewest relations between two entities (either direction) as they held at ``as_of``;
        [] when unconnected.

        A breadth-first search with a visited set, one statement per level: each entity is
        reached once, so the work grows with the entities and relations within ``max_depth``,
        not with the number of paths (which is exponential in a dense graph); it stops at
        ``max_visited`` entities.
        """
        if not 1 <= max_depth <= 6:
            raise InvalidInputError("max_depth", "must be between 1 and 6")
        ids = {"user_id": self.user_id}
        starts = [r[0] for r in conn.execute(g.ENTITY_IDS, {**ids, "name": normalize_name(source)})]
        goals = {r[0] for r in conn.execute(g.ENTITY_IDS, {**ids, "name": normalize_name(target)})}
        reached: dict[UUID, tuple[UUID, str] | None] = dict.fromkeys(starts)
        frontier = list(starts)
        found = next((s for s in starts if s in goals), None)
        for _ in range(max_depth):
            if found is not None or not frontier or len(reached) >= max_visited:
                break
            params = {**ids, "frontier": frontier, "visited": list(reached), **as_of.params()}
            frontier = []
            for entity, parent, step in conn.execute(g.PATH_STEP, params):
                reached[entity] = (parent, step)
                frontier.append(entity)
                if entity in goals and found is None:
                    found = entity
        if found is None:
            return []
        path, steps = [found], []
        while (link := reached[path[-1]]) is not None:
            path.append(link[0])
            steps.append(link[1])
        path.reverse()
        steps.reverse()
        names = dict(conn.execute(g.ENTITY_NAMES, {"user_id": self.user_id, "ids": path}).fetchall())
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
        rows = conn.execute(g.ENTITIES_OF, {"user_id": self.user_id, "memory_id": memory_id}).fetchall()
        return [EntityRef(name=n, entity_type=t) for n, t in rows]

    def link_counts(self, conn: Conn) -> tuple[int, int]:
        """How many mentions and relations the user's graph holds."""
        row = conn.execute(g.LINK_COUNTS, {"user_id": self.user_id}).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])

    def known_entities(self, conn: Conn, names: Sequence[str], limit: int = 5) -> list[str]:
        """The names of this user's entities among the normalised ``names``, longest first."""
        params = {"user_id": self.user_id, "names": list(names), "limit": limit}
        return [row[0] for row in conn.execute(g.KNOWN_NAMES, params).fetchall()]

    def conflicting_memory(self, conn: Conn, relations: Sequence[tuple[str, str, str]]) -> UUID | None:
        """A live memory asserting one of ``relations``' (source, type) with another target."""
        if not relations:
            return None
        params = {
            "user_id": self.user_id,
            "sources": [normalize_name(source) for source, _, _ in relations],
            "types": [kind for _, kind, _ in relations],
            "targets": [normalize_name(target) for _, _, target in relations],
        }
        row = conn.execute(g.CONFLICTS, params).fetchone()
        return None if row is None else row[0]

    def projection_rows(self, conn: Conn) -> tuple[list[Any], list[Any], list[Any]]:
        """The user's entities, mentions and relations as the projection writes them."""
        params = {"user_id": self.user_id}
        return (
            conn.execute(g.ALL_ENTITIES, params).fetchall(),
            conn.execute(g.ALL_MENTIONS, params).fetchall(),
            conn.execute(g.ALL_RELATIONS, params).fetchall(),
        )

    def memories_about(self, conn: Conn, name: str, limit: int = 20, as_of: AsOf = NOW) -> list[Any]:
        """Rows of the memories that mention the entity, most important first: the live ones, or
        the versions that held at ``as_of``."""
        params = {"user_id": self.user_id, "name": normalize_name(name), "limit": limit, **as_of.params()}
        statement = g.MEMORIES_ABOUT if as_of == NOW else g.MEMORIES_ABOUT_AS_OF
        return list(conn.execute(statement, params).fetchall())
