"""Re-project the AGE graph from the relational tables (after a restore, an upgrade, or drift)."""

from __future__ import annotations

import logging

from hello_pgmem import memory as table
from hello_pgmem.core.errors import GraphError
from hello_pgmem.db import Conn, Database
from hello_pgmem.graph.projection import AgeProjection
from hello_pgmem.graph.store import GraphStore

log = logging.getLogger(__name__)

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
        users = table.semantic_users(conn, user_id)
        if user_id is not None:
            projection.clear_user(conn, user_id)
        for user in users:
            _rebuild_user(conn, projection, user, counts)
    log.info("rebuilt the AGE graph: %s", counts)
    return counts


def _rebuild_user(conn: Conn, projection: AgeProjection, user_id: str, counts: dict[str, int]) -> None:
    entity_rows, mention_rows, relation_rows = GraphStore(user_id, projection).projection_rows(conn)
    entities = [{"id": i, "name": n, "type": t} for i, n, t in entity_rows]
    memory_ids = table.semantic_ids(conn, user_id)
    for start in range(0, max(len(entities), len(memory_ids)), BATCH):
        projection.create_vertices(
            conn, user_id, entities[start : start + BATCH], memory_ids[start : start + BATCH]
        )
    mentions = [{"memory_id": m, "entity_id": e} for m, e in mention_rows]
    relations = [{"memory_id": m, "source": s, "type": t, "target": o} for m, s, t, o in relation_rows]
    for start in range(0, max(len(mentions), len(relations)), BATCH):
        projection.create_edges(
            conn, user_id, mentions[start : start + BATCH], relations[start : start + BATCH]
        )
    counts["users"] += 1
    counts["entities"] += len(entities)
    counts["memories"] += len(memory_ids)
    counts["mentions"] += len(mentions)
    counts["relations"] += len(relations)
