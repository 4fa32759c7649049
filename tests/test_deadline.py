"""A call's time limit stops the work it started: statements are cancelled at it, and long loops
(ingest, embedding, chunking) end at their next check."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hello_pgmem import Database, HashingEmbedder, KnowledgeBase
from hello_pgmem.core.deadline import DeadlineExceededError, call_deadline, check_deadline, remaining_ms


def test_a_statement_is_cancelled_at_the_deadline(database: Database) -> None:
    with (
        call_deadline(0.3),
        pytest.raises(DeadlineExceededError, match="time limit"),
        database.transaction("alice") as conn,
    ):
        conn.execute("SELECT pg_sleep(30)")
    with database.transaction("alice") as conn:  # the pooled connection keeps its own timeout
        row = conn.execute("SELECT setting::int FROM pg_settings WHERE name = 'statement_timeout'").fetchone()
    assert row == (database.settings.statement_timeout_ms,)


def test_no_transaction_starts_after_the_deadline(database: Database) -> None:
    with call_deadline(0.01):
        time.sleep(0.02)
        with pytest.raises(DeadlineExceededError), database.transaction("alice"):
            pytest.fail("the transaction must not start")


def test_the_tighter_of_nested_limits_holds() -> None:
    assert remaining_ms() is None
    with call_deadline(100):
        with call_deadline(1000):
            left = remaining_ms()
            assert left is not None and left <= 100_000
        with call_deadline(0.001):
            time.sleep(0.002)
            with pytest.raises(DeadlineExceededError):
                check_deadline()
        check_deadline()
    assert remaining_ms() is None


def test_an_ingest_stops_between_files(clean: Database, tmp_path: Path) -> None:
    for number in range(300):
        (tmp_path / f"n{number:03}.md").write_text(f"# N{number}\n\n" + "word " * 200, encoding="utf-8")
    kb = KnowledgeBase(clean, HashingEmbedder(), "deadline_docs")
    with call_deadline(0.5), pytest.raises(DeadlineExceededError):
        kb.ingest([tmp_path])
    assert len(kb.list_documents(limit=1000)) < 300
