"""Right to erasure: everything of one user, in one transaction, with counts."""

from __future__ import annotations

from hello_pgmem.db import Database
from hello_pgmem.graph.projection import AgeProjection

# mentions and relations go with their memories and entities (ON DELETE CASCADE); they are
# counted first so the report is complete
ERASE = """
WITH counted AS (
    SELECT (SELECT count(*) FROM mentions WHERE user_id = %(user_id)s) AS mentions,
           (SELECT count(*) FROM relations WHERE user_id = %(user_id)s) AS relations
), log AS (DELETE FROM retrieval_log WHERE user_id = %(user_id)s RETURNING 1),
   working AS (DELETE FROM working_memories WHERE user_id = %(user_id)s RETURNING 1),
   memory AS (DELETE FROM memories WHERE user_id = %(user_id)s RETURNING 1),
   entity AS (DELETE FROM entities WHERE user_id = %(user_id)s RETURNING 1)
SELECT (SELECT count(*) FROM memory), (SELECT count(*) FROM working), (SELECT count(*) FROM entity),
       counted.mentions, counted.relations, (SELECT count(*) FROM log)
FROM counted
"""
NAMES = ("memories", "working_memories", "entities", "mentions", "relations", "retrieval_log")


def erase_user(db: Database, user_id: str) -> dict[str, int]:
    """Delete every row of ``user_id`` in every table, and their AGE vertices; rows per table."""
    with db.transaction(user_id) as conn:
        if db.graph_enabled:
            AgeProjection(db.settings.graph_name).clear_user(conn, user_id)
        row = conn.execute(ERASE, {"user_id": user_id}).fetchone()
    assert row is not None
    return dict(zip(NAMES, (int(v) for v in row), strict=True))
