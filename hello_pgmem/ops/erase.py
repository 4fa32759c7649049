"""Right to erasure: everything of one user, in one transaction, with counts."""

from __future__ import annotations

from hello_pgmem.db import Database
from hello_pgmem.graph.projection import AgeProjection
from hello_pgmem.graph.store import GraphStore
from hello_pgmem.memory import queries as q
from hello_pgmem.memory.working import WorkingMemory
from hello_pgmem.retrieval_log import erase_log


def erase_user(db: Database, user_id: str) -> dict[str, int]:
    """Delete every row of ``user_id`` in every table, and their AGE vertices; rows per table."""
    projection = AgeProjection(db.settings.graph_name) if db.graph_enabled else None
    graph = GraphStore(user_id, projection)
    with db.transaction(user_id) as conn:
        mentions, relations = graph.link_counts(conn)  # they go with the memories and entities
        counts = {
            "retrieval_log": erase_log(conn, user_id),
            "working_memories": WorkingMemory(db, user_id).clear_user(conn),
            "memory_accesses": conn.execute(q.CLEAR_ACCESSES, {"user_id": user_id}).rowcount,
            "memories": conn.execute(q.CLEAR_USER, {"user_id": user_id}).rowcount,
            "entities": graph.clear(conn),
            "mentions": mentions,
            "relations": relations,
        }
    names = (
        "memories",
        "working_memories",
        "entities",
        "mentions",
        "relations",
        "retrieval_log",
        "memory_accesses",
    )
    return {name: counts[name] for name in names}
