"""Episodic memory: one transaction per memory, ranked search with filters, sessions, fallback."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from hello_pgmem import Database, InvalidInputError
from hello_pgmem.embedding import HashingEmbedder
from hello_pgmem.memory import MemoryManager, reembed
from tests.conftest import Clock, row_counts, table_digest
from tests.deployments import ON_CITUS, TestServer

PEOPLE = [
    ("用户张三是一名Python开发者，专注于机器学习和数据分析", 0.8),
    ("李四是前端工程师，擅长React和Vue.js开发", 0.7),
    ("王五是产品经理，负责用户体验设计和需求分析", 0.6),
]


def test_reference_demo_episodic(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager()
    for content, importance in PEOPLE:
        manager.add_memory(content, "episodic", importance)
    results = manager.retrieve_memories("前端工程师", memory_types=["episodic"], limit=3, scoring="reference")
    assert results[0].content.startswith("李四")
    assert results[0].score is not None
    top = {**results[0].components, "relevance_score": results[0].score}
    assert {"relevance_score", "vector_score", "recency_score"} <= set(top)
    assert top["relevance_score"] == pytest.approx(
        (top["vector_score"] * 0.8 + top["recency_score"] * 0.2) * (0.8 + 0.7 * 0.4)
    )


def test_metadata_context_and_session_are_kept(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager(session_id="s-42")
    memory_id = manager.add_memory(
        "2024年3月15日，用户张三完成了第一个Python项目",
        "episodic",
        0.8,
        {
            "context": {"place": "在线学习平台"},
            "outcome": "成功",
            "participants": ["张三"],
            "tags": ["milestone"],
        },
    )
    got = manager.get_memory(memory_id)
    assert got is not None
    assert got.session_id == "s-42"
    assert got.metadata["context"] == {"place": "在线学习平台"}
    assert got.metadata["participants"] == ["张三"] and got.metadata["tags"] == ["milestone"]
    assert manager.session_memories("s-42")[0].id == memory_id
    [session] = manager.sessions()
    assert (session.session_id, session.episodes) == ("s-42", 1)


def test_session_episodes_in_time_order(make_manager: Callable[..., MemoryManager], clock: Clock) -> None:
    manager = make_manager(session_id="chat")
    for step in ("第一步", "第二步", "第三步"):
        manager.add_memory(step, "episodic", 0.5)
        clock.advance(minutes=1)
    assert [m.content for m in manager.session_memories("chat")] == [
        "第一步",
        "第二步",
        "第三步",
    ]


def test_filters(make_manager: Callable[..., MemoryManager], clock: Clock) -> None:
    manager = make_manager()
    start = clock()
    manager.add_memory("旧的会议记录 Python", "episodic", 0.9)
    clock.advance(days=10)
    manager.add_memory("新的会议记录 Python", "episodic", 0.3)
    found = manager.retrieve_memories(
        "会议记录", ["episodic"], 5, time_range=(start + timedelta(days=5), None)
    )
    assert [m.content for m in found] == ["新的会议记录 Python"]
    found = manager.retrieve_memories("会议记录", ["episodic"], 5, min_importance=0.5)
    assert [m.content for m in found] == ["旧的会议记录 Python"]
    found = manager.retrieve_memories("会议记录", time_range=(None, start + timedelta(days=1)))
    assert [m.content for m in found] == ["旧的会议记录 Python"]


def test_forgotten_memories_never_come_back(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager()
    manager.add_memory("不重要的事", "episodic", 0.05)
    manager.add_memory("重要的事", "episodic", 0.9)
    assert manager.forget_memories("importance_based", threshold=0.1) == 1
    found = manager.retrieve_memories("事", memory_types=["episodic"])
    assert [m.content for m in found] == ["重要的事"]
    stats = manager.get_memory_stats().memories_by_type["episodic"]
    assert (stats.count, stats.forgotten_count) == (1, 1)


def test_time_and_capacity_forgetting(make_manager: Callable[..., MemoryManager], clock: Clock) -> None:
    from hello_pgmem.core.models import MemoryConfig

    manager = make_manager(config=MemoryConfig(max_capacity=2))
    manager.add_memory("很久以前", "episodic", 0.9)
    clock.advance(days=40)
    for i, importance in enumerate((0.2, 0.5, 0.7)):
        manager.add_memory(f"最近 {i}", "episodic", importance)
    assert manager.forget_memories("time_based", max_age_days=30) == 1
    assert manager.forget_memories("capacity_based") == 1  # 3 left, capacity 2: drop 0.2
    assert {m.content for m in manager.list_memories("episodic")} == {"最近 1", "最近 2"}


def test_a_forget_that_spares_nothing_needs_confirm_and_can_be_undone(
    make_manager: Callable[..., MemoryManager], make_tool: Callable[..., Any], clean: Database
) -> None:
    manager = make_manager()
    for i in range(3):
        manager.add_memory(f"记忆 {i}", "episodic", 0.5)
    before = table_digest(clean)
    for sweeping in (
        {"strategy": "importance_based", "threshold": 1},
        {"strategy": "time_based", "max_age_days": 0},
    ):
        with pytest.raises(InvalidInputError, match="confirm: must be true"):
            manager.forget_memories(**sweeping)  # type: ignore[arg-type]
    assert table_digest(clean) == before, "a refused forget changes nothing"
    tool = make_tool("alice")
    assert tool.run("forget", strategy="time_based", max_age_days=0).startswith("❌")
    assert manager.forget_memories("importance_based", threshold=1, confirm=True) == 3
    assert manager.list_memories("episodic") == []
    assert tool.run("restore") == "♻️ Restored 3 memories"
    assert sorted(m.content for m in manager.list_memories("episodic")) == ["记忆 0", "记忆 1", "记忆 2"]
    assert manager.retrieve_memories("记忆 1", memory_types=["episodic"])
    assert manager.restore_memories() == 0, "nothing left to restore"
    [first, *_] = manager.list_memories("episodic")
    manager.forget_memories("importance_based", threshold=1, confirm=True)
    unknown = "00000000-0000-0000-0000-000000000000"
    assert manager.restore_memories([unknown]) == 0, "an id that names no forgotten memory restores nothing"
    assert manager.restore_memories([first.id, unknown]) == 1
    assert [m.id for m in manager.list_memories("episodic")] == [first.id]
    manager.forget_memories("importance_based", threshold=1, confirm=True)
    assert tool.run("restore", memory_ids=[str(first.id)[:8]]) == "♻️ Restored 1 memories", "a prefix names it"
    assert tool.run("restore", memory_ids=[unknown[:8]]) == f"❌ no such forgotten memory: {unknown[:8]}"


def test_keyword_fallback_when_no_vectors_of_the_model(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    old = make_manager(embedder=HashingEmbedder(256))
    old.add_memory("李四是前端工程师", "episodic", 0.7)
    new = make_manager()  # 384 dimensions: another model, no vectors yet
    found = new.retrieve_memories("前端工程师", ["episodic"], scoring="reference")
    assert [m.content for m in found] == ["李四是前端工程师"]
    assert found[0].components["vector_score"] == 0.5
    [hybrid] = new.retrieve_memories("前端工程师", ["episodic"])  # the lexical branch needs no vector
    assert (hybrid.content, hybrid.components["text_score"], hybrid.components["vector_score"]) == (
        "李四是前端工程师",
        1.0,
        0.0,
    )


def test_reembed_moves_memories_in_resumable_batches(
    make_manager: Callable[..., MemoryManager], clean: Database, embedder: HashingEmbedder
) -> None:
    old = make_manager(embedder=HashingEmbedder(256))
    for content, importance in PEOPLE:
        old.add_memory(content, "episodic", importance)
    other = make_manager("bob", embedder=HashingEmbedder(256))
    other.add_memory("bob 的记忆", "episodic", 0.5)
    progress: list[tuple[int, int]] = []
    assert (
        reembed(
            clean,
            embedder,
            "alice",
            batch_size=2,
            max_batches=1,
            progress=lambda d, r: progress.append((d, r)),
        )
        == 2
    )
    assert progress == [(2, 1)]
    assert reembed(clean, embedder, "alice", batch_size=2) == 1
    with clean.connection() as conn:
        models = conn.execute(
            "SELECT user_id, embedding_model, count(*) FROM memories GROUP BY 1, 2 ORDER BY 1"
        ).fetchall()
    assert models == [("alice", embedder.model_name, 3), ("bob", "hashing-v1-256", 1)]
    found = make_manager().retrieve_memories("前端工程师", ["episodic"])
    assert found[0].content.startswith("李四") and found[0].components["vector_score"] != 0.5


def test_a_failure_before_commit_leaves_nothing(
    make_manager: Callable[..., MemoryManager], clean: Database, test_server: TestServer
) -> None:
    with clean.connection() as conn:
        conn.execute("""
            CREATE FUNCTION pg_temp_fail() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'injected failure after insert'; END $$""")
    try:
        with clean.connection() as conn:
            test_server.allow_triggers(conn)
            conn.execute("""CREATE CONSTRAINT TRIGGER fail_at_commit AFTER INSERT ON memories
                DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
                WHEN (NEW.content LIKE 'boom%%') EXECUTE FUNCTION pg_temp_fail()""")
        manager = make_manager()
        before = row_counts(clean)
        # on Citus the deferred trigger fails on the worker, at the commit the coordinator asks for
        failed: tuple[type[psycopg.Error], str] = (psycopg.errors.RaiseException, "injected failure")
        if ON_CITUS:
            failed = (psycopg.errors.InternalError_, "could not commit")
        with pytest.raises(failed[0], match=failed[1]):
            manager.add_memory("boom: written, then the commit fails", "episodic", 0.5)
        assert row_counts(clean) == before
    finally:
        with clean.connection() as conn:
            test_server.allow_triggers(conn)
            conn.execute("DROP TRIGGER IF EXISTS fail_at_commit ON memories")
            conn.execute("DROP FUNCTION IF EXISTS pg_temp_fail()")
