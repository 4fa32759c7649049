"""MemoryManager: relevance ordering, update/remove, consolidation, stats, scoping, ids."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from uuid import UUID

import numpy as np
import psycopg
import pytest

from hello_pgmem import Database, HashingEmbedder, InvalidInputError
from hello_pgmem.core.errors import EmbeddingError
from hello_pgmem.core.models import MemoryItem
from hello_pgmem.memory import MemoryManager
from tests.conftest import Clock, row_counts
from tests.deployments import TestServer


def test_merged_results_are_ranked_by_relevance_not_importance(
    make_manager: Callable[..., MemoryManager],
) -> None:
    manager = make_manager()
    manager.add_memory("李四是前端工程师，擅长React和Vue.js开发", "episodic", 0.2)
    manager.add_memory("今天的天气很好，适合散步", "semantic", 1.0)
    manager.add_memory("前端工程师需要懂 React", "working", 0.3)
    results = manager.retrieve_memories("前端工程师 React", limit=3)
    assert results[0].importance < 1.0, "the relevant memory must beat the merely important one"
    scores = [r.score or 0.0 for r in results]
    assert scores == sorted(scores, reverse=True)


def test_update_reembeds_and_merges_metadata(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager()
    memory_id = manager.add_memory("张三喜欢喝咖啡", "semantic", 0.5, {"source": "chat", "tags": ["饮品"]})
    assert manager.update_memory(
        memory_id, content="张三喜欢喝绿茶", importance=0.9, metadata={"verified": True}
    )
    got = manager.get_memory(memory_id)
    assert got is not None
    assert (got.content, got.importance) == ("张三喜欢喝绿茶", 0.9)
    assert got.metadata == {"source": "chat", "tags": ["饮品"], "verified": True}
    top = manager.retrieve_memories("绿茶", memory_types=["semantic"], limit=1)[0]
    assert top.id == memory_id and top.components["vector_score"] > 0.3


def test_batch_add_stores_every_item_searchable_and_graph_linked(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    manager = make_manager()
    ids = manager.add_memories(
        ["张三在北京工作", "李四喜欢喝咖啡", "王五养了一只猫"],
        "semantic",
        importance=[0.9, 0.5, 0.2],
        metadata=[{"source": "import"}, {}, {"tags": ["宠物"]}],
    )
    assert len(ids) == len(set(ids)) == 3
    stored = [manager.get_memory(i) for i in ids]
    assert [(m.content, m.importance) for m in stored if m] == [
        ("张三在北京工作", 0.9),
        ("李四喜欢喝咖啡", 0.5),
        ("王五养了一只猫", 0.2),
    ]
    assert stored[0] is not None and stored[0].metadata["source"] == "import"
    top = manager.retrieve_memories("李四 咖啡", memory_types=["semantic"], limit=1)[0]
    assert top.id == ids[1]
    with clean.connection() as conn:
        linked = conn.execute(
            "SELECT DISTINCT memory_id FROM mentions WHERE user_id = %s", (manager.user_id,)
        ).fetchall()
    assert ids[0] in {r[0] for r in linked}, "the graph is written in the same batch"
    episodic = manager.add_memories(["第一件事", "第二件事"], importance=0.4)
    assert [m.memory_type for m in map(manager.get_memory, episodic) if m] == ["episodic", "episodic"]


class DownEmbedder(HashingEmbedder):
    """The hashing embedder, down: every call fails, and is counted."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        raise EmbeddingError("the embedder went away")


def test_a_batch_that_embeds_in_its_write_writes_nothing_when_the_embedder_fails(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    """A write that embeds its texts itself (the hashing embedder, PGMEM_EMBED=auto) embeds the
    whole batch once, before its transaction: a failure leaves nothing written."""
    embedder = DownEmbedder()
    manager = make_manager(embedder=embedder)
    with pytest.raises(EmbeddingError, match="went away"):
        manager.add_memories([f"note {n} about the harbour" for n in range(250)])
    assert embedder.calls == 1
    with clean.connection() as conn:
        row = conn.execute("SELECT count(*) FROM memories WHERE user_id = %s", (manager.user_id,)).fetchone()
    assert row == (0,)


def test_update_and_remove_of_missing_ids(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager()
    ghost = UUID("00000000-0000-4000-8000-000000000000")
    assert manager.update_memory(ghost, content="x") is False
    assert manager.remove_memory(ghost) is False
    with pytest.raises(InvalidInputError, match="give content, importance or metadata"):
        manager.update_memory(ghost)


def test_remove_and_has_memory(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager()
    working = manager.add_memory("临时", "working", 0.5)
    lasting = manager.add_memory("长期", "episodic", 0.5)
    assert manager.has_memory(working) and manager.has_memory(lasting)
    assert manager.remove_memory(working) and manager.remove_memory(lasting)
    assert not manager.has_memory(working) and not manager.has_memory(lasting)
    assert not manager.has_memory("not-a-uuid")


def test_consolidate_working_to_episodic_moves_exactly_the_qualifying_items(
    make_manager: Callable[..., MemoryManager],
) -> None:
    manager = make_manager(session_id="s")
    keep = manager.add_memory("不够重要", "working", 0.69)
    move = manager.add_memory("足够重要", "working", 0.7)
    cap = manager.add_memory("非常重要", "working", 0.95)
    assert manager.consolidate_memories("working", "episodic", 0.7) == 2
    assert [m.id for m in manager.list_memories("working")] == [keep]
    moved = {m.id: m for m in manager.list_memories("episodic")}
    assert set(moved) == {move, cap}
    assert moved[move].importance == pytest.approx(0.77)
    assert moved[cap].importance == 1.0
    assert moved[move].metadata["consolidated_from"] == "working"
    assert moved[move].session_id == "s"
    assert manager.retrieve_memories("足够重要", memory_types=["episodic"], limit=1)[0].id == move


def test_consolidate_episodic_to_semantic(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager()
    memory_id = manager.add_memory("Python 是解释型语言", "episodic", 0.85)
    manager.add_memory("午饭吃了面", "episodic", 0.3)
    assert manager.consolidate_memories("episodic", "semantic", 0.8) == 1
    got = manager.get_memory(memory_id)
    assert got is not None and got.memory_type == "semantic" and got.importance == pytest.approx(0.935)
    assert manager.retrieve_memories("解释型语言", memory_types=["semantic"])[0].id == memory_id


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("semantic", "episodic"),
        ("episodic", "working"),
        ("episodic", "episodic"),
        ("working", "procedural"),
    ],
)
def test_consolidate_rejects_other_directions(
    make_manager: Callable[..., MemoryManager], source: str, target: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        make_manager().consolidate_memories(source, target, 0.5)
    assert caught.value.field == "to_type"


def test_consolidate_needs_the_target_enabled(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager(enable_semantic=False)
    manager.add_memory("x", "episodic", 0.9)
    with pytest.raises(InvalidInputError, match="'semantic' is not enabled"):
        manager.consolidate_memories("episodic", "semantic", 0.5)


def test_consolidation_is_atomic(
    make_manager: Callable[..., MemoryManager], clean: Database, test_server: TestServer
) -> None:
    manager = make_manager()
    manager.add_memory("boom 重要的工作记忆", "working", 0.9)
    before = row_counts(clean)
    with clean.connection() as conn:
        conn.execute("""CREATE FUNCTION fail_insert() RETURNS trigger LANGUAGE plpgsql AS $$
                        BEGIN RAISE EXCEPTION 'injected failure while moving'; END $$""")
        test_server.allow_triggers(conn)
        conn.execute("""CREATE TRIGGER fail_insert AFTER INSERT ON memories FOR EACH ROW
                        WHEN (NEW.content LIKE 'boom%%') EXECUTE FUNCTION fail_insert()""")
    try:
        with pytest.raises(psycopg.errors.RaiseException, match="injected failure"):
            manager.consolidate_memories("working", "episodic", 0.5)
        assert row_counts(clean) == before
        assert [m.content for m in manager.list_memories("working")] == ["boom 重要的工作记忆"]
    finally:
        with clean.connection() as conn:
            test_server.allow_triggers(conn)
            conn.execute("DROP TRIGGER fail_insert ON memories")
            conn.execute("DROP FUNCTION fail_insert()")


def test_clear_all_touches_only_this_user(make_manager: Callable[..., MemoryManager]) -> None:
    alice, bob = make_manager("alice"), make_manager("bob")
    for manager in (alice, bob):
        manager.add_memory("工作", "working", 0.5)
        manager.add_memory("事件", "episodic", 0.5)
    assert alice.clear_all() == 2
    assert alice.get_memory_stats().total_memories == 0
    assert bob.get_memory_stats().total_memories == 2


def test_stats(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager()
    manager.add_memory("工作一", "working", 0.4)
    manager.add_memory("工作二", "working", 0.6)
    manager.add_memory("事件", "episodic", 0.9)
    stats = manager.get_memory_stats()
    assert stats.total_memories == 3
    assert stats.memories_by_type["working"].avg_importance == pytest.approx(0.5)
    assert stats.memories_by_type["episodic"].count == 1
    assert stats.memories_by_type["semantic"].count == 0
    assert stats.config == {"max_capacity": 100, "importance_threshold": 0.1, "decay_factor": 0.95}


def test_importance_is_estimated_and_types_classified(
    make_manager: Callable[..., MemoryManager],
) -> None:
    manager = make_manager()
    memory_id = manager.add_memory("昨天发生了一个重要的错误", auto_classify=True)
    got = manager.get_memory(memory_id)
    assert got is not None and got.memory_type == "episodic" and got.importance == pytest.approx(0.7)


def test_ids_resolve_by_prefix_among_the_users_own(
    make_manager: Callable[..., MemoryManager], clock: Clock
) -> None:
    alice, bob = make_manager("alice"), make_manager("bob")
    ids = [
        UUID("abcdef12-0000-4000-8000-000000000001"),
        UUID("abcdef12-1111-4000-8000-000000000002"),
    ]
    for memory_id in ids:
        alice._parts.episodic.add(
            MemoryItem.build(
                id=memory_id,
                content=f"m {memory_id}",
                memory_type="episodic",
                user_id="alice",
                timestamp=clock(),
            )
        )
    assert alice.resolve_id(str(ids[0])) == ids[0]
    assert alice.resolve_id("ABCDEF12-1111") == ids[1]
    with pytest.raises(InvalidInputError, match="matches several memories"):
        alice.resolve_id("abcdef12")
    assert bob.resolve_id("abcdef12-1111") is None
    with pytest.raises(InvalidInputError, match="at least 8"):
        alice.resolve_id("abc")
    with pytest.raises(InvalidInputError, match="at least 8"):
        alice.resolve_id("'; DROP TABLE memories; --")


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda m: m.add_memory("", "episodic"), "content"),
        (lambda m: m.add_memory("x", "dream"), "memory_type"),
        (lambda m: m.add_memory("x", "episodic", 2.0), "importance"),
        (lambda m: m.add_memory("x", "episodic", 0.5, ["not", "a", "dict"]), "metadata"),
        (lambda m: m.retrieve_memories("", limit=3), "query"),
        (lambda m: m.retrieve_memories("x", limit=0), "limit"),
        (lambda m: m.retrieve_memories("x", min_importance=float("nan")), "min_importance"),
        (lambda m: m.forget_memories("random"), "strategy"),
        (lambda m: m.forget_memories("time_based", max_age_days=-1), "max_age_days"),
        (lambda m: m.consolidate_memories("working", "episodic", 1.5), "importance_threshold"),
        (lambda m: m.update_memory("not-a-uuid", content="x"), "memory_id"),
        (lambda m: m.add_memories(["fine", "", "fine"]), "contents[1]"),
        (lambda m: m.add_memories(["fine", "fine", "x" * 20_001]), "contents[2]"),
        (lambda m: m.add_memories(["a", "b"], metadata=[{}, "not a dict"]), "metadata[1]"),
        (lambda m: m.add_memories(["a", "b"], timestamps=["2024-01-01T00:00:00Z", "soon"]), "timestamps[1]"),
        (lambda m: m.add_memories([]), "contents"),
        (lambda m: m.add_memories(["a", "b"], "working"), "memory_type"),
        (lambda m: m.add_memories(["a", "b"], importance=[0.5]), "importance"),
        (lambda m: m.add_memories(["a", "b"], importance=[0.5, 1.5]), "importance[1]"),
        (lambda m: m.add_memories(["a", "b"], metadata=[{}]), "metadata"),
    ],
)
def test_bad_input_names_the_field_and_changes_nothing(
    make_manager: Callable[..., MemoryManager],
    clean: Database,
    call: Callable[[MemoryManager], object],
    field: str,
) -> None:
    manager = make_manager()
    manager.add_memory("已有的记忆", "episodic", 0.5)
    before = row_counts(clean)
    with pytest.raises(InvalidInputError) as caught:
        call(manager)
    assert caught.value.field == field
    assert row_counts(clean) == before


def test_a_long_content_is_split_into_memories_in_order_when_asked(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    manager = make_manager(enable_working=False)
    sentence = "Alice kept a diary of the long trip across the mountains. "
    long = sentence * 500  # 29,000 characters
    with pytest.raises(InvalidInputError) as caught:
        manager.add_memories(["before", long, "after"])
    assert caught.value.field == "contents[1]" and row_counts(clean)["memories"] == 0
    too_long = "x" * (manager.config.max_content_chars * 50 + 1)  # more than 50 parts
    with pytest.raises(InvalidInputError) as caught:
        manager.add_memories(["before", too_long], split_long=True)
    assert caught.value.field == "contents[1]" and row_counts(clean)["memories"] == 0
    when = datetime(2024, 5, 1, tzinfo=UTC)
    ids = manager.add_memories(
        ["before", long, "after"],
        metadata=[{"turn": 1}, {"turn": 2}, {"turn": 3}],
        timestamps=[when, when, when],
        importance=[0.2, 0.9, 0.3],
        split_long=True,
    )
    stored = [manager.get_memory(i) for i in ids]
    assert all(m is not None for m in stored)
    parts = [m for m in stored if m is not None and m.metadata["turn"] == 2]
    assert len(ids) == 2 + len(parts) and len(parts) == 2
    assert [m.metadata["part"] for m in parts] == [1, 2] and {m.metadata["parts"] for m in parts} == {2}
    assert all(len(m.content) <= manager.config.max_content_chars for m in parts)
    assert "".join(m.content.replace(" ", "") for m in parts) == long.replace(" ", "")
    assert {m.importance for m in parts} == {0.9} and {m.timestamp for m in parts} == {when}
    contents = [m.content for m in stored if m is not None]
    assert contents[0] == "before" and contents[-1] == "after"
    with manager.db.transaction(manager.user_id) as conn:
        order = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM memories WHERE user_id = %s ORDER BY seq", (manager.user_id,)
            )
        ]
    assert order == ids, "the parts keep the batch's order"
