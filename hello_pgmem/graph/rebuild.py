"""Re-project the AGE graph from the relational tables (after a restore, an upgrade, or drift)."""

from __future__ import annotations

import logging
from typing import Any

from hello_pgmem.db import Database
from hello_pgmem.errors import GraphError
from hello_pgmem.graph.projection import AgeProjection

log = logging.getLogger(__name__)

USERS = """
SELECT DISTINCT user_id FROM memories
WHERE memory_type = 'semantic' AND (%(user_id)s::text IS NULL OR user_id = %(user_id)s)
"""
ENTITIES = "SELECT id::text, name, entity_type FROM entities WHERE user_id = %(user_id)s ORDER BY id"
MEMORIES = (
    "SELECT id::text FROM memories WHERE user_id = %(user_id)s AND memory_type = 'semantic' ORDER BY id"
)
MENTIONS = "SELECT memory_id::text, entity_id::text FROM mentions WHERE user_id = %(user_id)s"
RELATIONS = """
SELECT memory_id::text, source_id::text, relation_type, target_id::text FROM relations
WHERE user_id = %(user_id)s
"""

BATCH = 1000


def rebuild_graph(db: Database, user_id: str | None = None) -> dict[str, int]:
    """Delete the projection of ``user_id`` (or everyone) and write it again; return counts."""
    if not db.graph_enabled:
        raise GraphError("Apache AGE is not installed in this database: there is no graph to rebuild")
    projection = AgeProjection(db.settings.graph_name)
    counts = {"users": 0, "entities": 0, "memories": 0, "mentions": 0, "relations": 0}
    with db.transaction(user_id) as conn:
        if user_id is None:
            projection.clear_all(conn)
        users = [row[0] for row in conn.execute(USERS, {"user_id": user_id}).fetchall()]
        if user_id is not None:
            projection.clear_user(conn, user_id)
        for user in users:
            _rebuild_user(conn, projection, user, counts)
    log.info("rebuilt the AGE graph: %s", counts)
    return counts


def _rebuild_user(conn: Any, projection: AgeProjection, user_id: str, counts: dict[str, int]) -> None:
    params = {"user_id": user_id}
    entities = [{"id": i, "name": n, "type": t} for i, n, t in conn.execute(ENTITIES, params).fetchall()]
    memory_ids = [row[0] for row in conn.execute(MEMORIES, params).fetchall()]
    for start in range(0, max(len(entities), len(memory_ids)), BATCH):
        projection.create_vertices(
            conn, user_id, entities[start : start + BATCH], memory_ids[start : start + BATCH]
        )
    mentions = [{"memory_id": m, "entity_id": e} for m, e in conn.execute(MENTIONS, params).fetchall()]
    relations = [
        {"memory_id": m, "source": s, "type": t, "target": o}
        for m, s, t, o in conn.execute(RELATIONS, params).fetchall()
    ]
    for start in range(0, max(len(mentions), len(relations)), BATCH):
        projection.create_edges(
            conn, user_id, mentions[start : start + BATCH], relations[start : start + BATCH]
        )
    counts["users"] += 1
    counts["entities"] += len(entities)
    counts["memories"] += len(memory_ids)
    counts["mentions"] += len(mentions)
    counts["relations"] += len(relations)
