"""The term counts' statement trigger on one server: a delete of many memories lowers the counts
with joins on the key and reads its transition table once (a delete of the zero counts by a
subquery could rescan it for every count: 30 s instead of 0.1 for 3,715 memories). Plans are read
with auto_explain."""

from __future__ import annotations

from typing import Any

from hello_pgmem import Database
from hello_pgmem.ops.check import TERM_COUNTS
from tests.test_search import MODEL, _load


def test_deleting_many_memories_lowers_the_counts_by_joins(clean: Database) -> None:
    with clean.connection() as conn:
        _load(conn)  # ten users, 4,715 memories, each with a term of its own
        conn.execute("ANALYZE memory_term_counts")  # with its statistics, the old plan rescanned
    notices: list[str] = []
    with clean.connection() as conn:
        conn.add_notice_handler(lambda diagnostic: notices.append(diagnostic.message_primary or ""))
        conn.execute("LOAD 'auto_explain'")
        for name, value in (
            ("auto_explain.log_min_duration", "0"),
            ("auto_explain.log_nested_statements", "on"),
            ("auto_explain.log_level", "notice"),
            ("auto_explain.log_analyze", "on"),
            ("auto_explain.log_timing", "off"),
        ):
            conn.execute("SELECT set_config(%s, %s, false)", (name, value))
        conn.execute("DELETE FROM memories WHERE embedding_model = %s", (MODEL,))
        conn.execute("RESET auto_explain.log_min_duration")
    plans = [plan for plan in notices if "Delete on memory_term_counts" in plan]
    assert plans, "auto_explain showed the trigger's delete of the counts"
    scans = [line for plan in plans for line in plan.splitlines() if "Named Tuplestore Scan" in line]
    assert scans and all("loops=1)" in line for line in scans), plans[0]  # read once, not per count
    with clean.connection() as conn:
        assert conn.execute(TERM_COUNTS).fetchall() == [], "the counts equal a recount"
        left: Any = conn.execute("SELECT count(*) FROM memory_term_counts").fetchone()
        assert left == (0,), "no count of zero is kept"
