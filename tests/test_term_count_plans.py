"""The term counts after one statement of thousands of memories: the delete is staged by its
statement trigger and applied at commit in one MERGE (sql/statistics.sql), which lowers the counts,
deletes those that reach zero, and leaves nothing staged."""

from __future__ import annotations

from typing import Any

from hello_pgmem import Database
from hello_pgmem.ops.check import TERM_COUNTS
from tests.test_search import MODEL, _load


def test_deleting_many_memories_lowers_the_counts_and_keeps_no_zero(clean: Database) -> None:
    with clean.connection() as conn:
        _load(conn)  # ten users, 4,715 memories, each with a term of its own
    with clean.connection() as conn:  # counted at the load's commit
        counted: Any = conn.execute("SELECT count(*) FROM memory_term_counts").fetchone()
    assert counted[0] > 4_715
    with clean.connection() as conn:
        conn.execute("DELETE FROM memories WHERE embedding_model = %s", (MODEL,))
        staged: Any = conn.execute("SELECT count(*) FROM memory_stat_changes").fetchone()
        assert staged == (4_715,), "the statement staged its rows, for the step at commit"
    with clean.connection() as conn:
        assert conn.execute(TERM_COUNTS).fetchall() == [], "the counts equal a recount"
        left: Any = conn.execute("SELECT count(*) FROM memory_term_counts").fetchone()
        assert left == (0,), "no count of zero is kept"
        staged = conn.execute("SELECT count(*) FROM memory_stat_changes").fetchone()
        assert staged == (0,), "nothing stays staged after the commit"
