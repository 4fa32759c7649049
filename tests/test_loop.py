"""The long-term memory loop: extraction, de-duplication, context assembly, access, decay."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hello_pgmem import Database, HashingEmbedder
from hello_pgmem.core.text import count_tokens
from hello_pgmem.llm import ChatClient
from hello_pgmem.loop.assembler import MEMORY, RELATION, ContextLine, MemoryAssembler, render
from hello_pgmem.loop.system import AgentMemorySystem
from hello_pgmem.loop.writer import LoopConfig, same_text
from hello_pgmem.memory import MemoryManager, apply_decay
from hello_pgmem.ops.maintain import maintain
from tests.conftest import Clock
from tests.fake_openai import FakeOpenAI, serve


def memories(*items: dict[str, Any]) -> str:
    return json.dumps({"memories": list(items)}, ensure_ascii=False)


def fact(
    content: str,
    kind: str = "fact",
    importance: float = 0.7,
    entities: list[str] | None = None,
    relations: list[tuple[str, str, str]] | None = None,
) -> dict[str, Any]:
    return {
        "content": content,
        "kind": kind,
        "importance": importance,
        "entities": entities or [],
        "relations": [{"source": s, "type": t, "target": o} for s, t, o in relations or []],
    }


@pytest.fixture()
def scripted(
    clean: Database, embedder: HashingEmbedder, clock: Clock
) -> Iterator[tuple[list[str], AgentMemorySystem]]:
    """A memory system whose chat model answers with the next scripted reply."""
    replies: list[str] = []
    with serve(FakeOpenAI(chat=lambda body: replies.pop(0))) as fake:
        llm = ChatClient("fake", base_url=fake.base_url, api_key="k", max_retries=0)
        system = AgentMemorySystem(llm, database=clean, embedder=embedder, clock=clock)
        yield replies, system


def rows(db: Database, query: str, *args: object) -> list[tuple[Any, ...]]:
    with db.connection() as conn:
        return conn.execute(query, args).fetchall()


def test_extraction_maps_kinds_onto_types(
    scripted: tuple[list[str], AgentMemorySystem], clean: Database
) -> None:
    replies, system = scripted
    replies.append(
        memories(
            fact(
                "用户叫张三，是一名Python开发者",
                entities=["张三", "Python开发者"],
                relations=[("张三", "职业", "Python开发者")],
            ),
            fact("用户喜欢简洁的回答", kind="preference", importance=0.6),
            fact("用户昨天完成了项目上线", kind="event", importance=0.8),
            fact("调试前先看日志", kind="lesson", importance=0.5),
        )
    )
    result = system.process_turn("我叫张三，是Python开发者，昨天项目上线了", "恭喜上线！", "zhang")
    assert [d.action for d in result.decisions] == ["added"] * 4
    types = dict(rows(clean, "SELECT content, memory_type FROM memories WHERE user_id = 'zhang'"))
    assert types == {
        "用户叫张三，是一名Python开发者": "semantic",
        "用户喜欢简洁的回答": "semantic",
        "用户昨天完成了项目上线": "episodic",
        "调试前先看日志": "semantic",
    }
    relations = rows(clean, "SELECT r.relation_type FROM relations r WHERE r.user_id = 'zhang'")
    assert relations == [("职业",)], "the model's relations are stored, not re-extracted"
    assert "## Related memories" in result.context and "用户叫张三" in result.context


def test_nothing_worth_keeping_and_malformed_output(
    scripted: tuple[list[str], AgentMemorySystem], clean: Database
) -> None:
    replies, system = scripted
    replies += [
        memories(),
        "这不是 JSON",
        json.dumps({"memories": [{"content": "x", "kind": "gossip", "importance": 2}]}),
    ]
    for _ in range(3):
        system.process_turn("今天天气不错", "是的", "u")
    assert rows(clean, "SELECT count(*) FROM memories") == [(0,)]
    assert replies == [], "all three answers were consumed"


def test_malformed_output_reports_the_error(
    scripted: tuple[list[str], AgentMemorySystem], clean: Database
) -> None:
    replies, system = scripted
    replies.append('{"memories": [{"content": "用户叫张三", "kind": "fact", "importance": "very"}]}')
    result = system.process_turn("我叫张三", "你好张三", "u")
    assert result.decisions == [] and result.error is not None and "does not fit" in result.error
    assert rows(clean, "SELECT count(*) FROM memories") == [(0,)]


def test_duplicates_are_refreshed_not_stored_twice(
    scripted: tuple[list[str], AgentMemorySystem], clean: Database
) -> None:
    replies, system = scripted
    replies += [
        memories(fact("用户喜欢喝咖啡", kind="preference", importance=0.5)),
        memories(fact("用户喜欢喝咖啡。", kind="preference", importance=0.8)),
    ]
    system.process_turn("我喜欢喝咖啡", "好的", "u")
    result = system.process_turn("我真的喜欢喝咖啡", "记住了", "u")
    assert result.decisions[0].action == "duplicate"
    # one refresh by the duplicate (written), and one recall by each turn's context (logged)
    assert rows(clean, "SELECT content, importance, access_count FROM memories") == [
        ("用户喜欢喝咖啡", 0.8, 1)
    ]
    assert rows(clean, "SELECT access_count FROM decay_candidates") == [(3,)]


def test_contradiction_updates_and_keeps_history(
    scripted: tuple[list[str], AgentMemorySystem], clean: Database, clock: Clock
) -> None:
    replies, system = scripted
    replies += [
        memories(fact("张三住在北京", entities=["张三", "北京"], relations=[("张三", "居住于", "北京")])),
        memories(
            fact(
                "张三搬家了，现在住在上海", entities=["张三", "上海"], relations=[("张三", "居住于", "上海")]
            )
        ),
    ]
    system.process_turn("我住在北京", "好的", "u")
    clock.advance(days=3)
    result = system.process_turn("我搬到上海了", "好的", "u")
    decision = result.decisions[0]
    assert (decision.action, decision.reason, decision.previous) == ("updated", "contradicts", "张三住在北京")
    [(content,)] = rows(clean, "SELECT content FROM memories WHERE version_of IS NULL")
    assert content == "张三搬家了，现在住在上海"
    # the old fact is kept twice: as believed until now (retired), and as held until the move
    versions = rows(
        clean,
        "SELECT content, superseded_at IS NOT NULL, valid_to, metadata ->> 'replaced_because'"
        " FROM memories WHERE version_of IS NOT NULL ORDER BY superseded_at NULLS LAST",
    )
    assert [(v[0], v[1], v[3]) for v in versions] == [
        ("张三住在北京", True, "contradicts"),
        ("张三住在北京", False, None),
    ]
    assert versions[1][2] == clock()  # held until the turn that said otherwise


def test_refinement_and_unrelated_memories(
    scripted: tuple[list[str], AgentMemorySystem], clean: Database
) -> None:
    replies, system = scripted
    replies += [
        memories(fact("张三喜欢喝咖啡", kind="preference", entities=["张三"])),
        memories(fact("张三很喜欢喝咖啡", kind="preference", entities=["张三"])),
        memories(fact("李四是产品经理", entities=["李四"])),
    ]
    system.process_turn("a", "b", "u")
    assert system.process_turn("c", "d", "u").decisions[0].reason == "refines"
    assert system.process_turn("e", "f", "u").decisions[0].action == "added"
    assert sorted(r[0] for r in rows(clean, "SELECT content FROM memories WHERE version_of IS NULL")) == [
        "张三很喜欢喝咖啡",
        "李四是产品经理",
    ]
    # a refinement corrects what was believed: the earlier wording is retired, never closed
    assert rows(
        clean,
        "SELECT content, valid_to, superseded_at IS NOT NULL FROM memories WHERE version_of IS NOT NULL",
    ) == [("张三喜欢喝咖啡", None, True)]


def test_same_text() -> None:
    assert same_text("用户喜欢喝咖啡。", "用户 喜欢喝咖啡")
    assert same_text("The User likes TEA!", "the user likes tea")
    assert not same_text("用户喜欢喝咖啡", "用户喜欢喝茶")


def test_assembler_lines_and_budget(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager("u")
    manager.add_memory("张三是一名Python开发者，在阿里巴巴工作", "semantic", 0.9)
    manager.add_memory("上周张三去杭州出差", "episodic", 0.6)
    assembler = MemoryAssembler(manager, min_score=0.05, language="zh")
    full = assembler.build_context("张三最近在做什么", 1500)
    lines = full.splitlines()
    assert lines[0] == "## 相关记忆" and "## 相关关系" in lines
    assert "- 张三 —工作于→ 阿里巴巴" in lines and "- 张三 —职业→ Python开发者" in lines
    assert any("Python开发者，在阿里巴巴工作" in line for line in lines)
    small = assembler.build_context("张三最近在做什么", 30)
    assert set(small.splitlines()) <= set(lines)
    assert len(small) < len(full)


def test_render_drops_the_lowest_lines_first() -> None:
    lines = [
        ContextLine(MEMORY, "- 重要的记忆 A", 0.9),
        ContextLine(MEMORY, "- 次要的记忆 B", 0.2),
        ContextLine(RELATION, "- 张三 —职业→ 工程师", 0.5),
    ]
    everything = "## 相关记忆\n- 重要的记忆 A\n- 次要的记忆 B\n## 相关关系\n- 张三 —职业→ 工程师"
    without_b = "## 相关记忆\n- 重要的记忆 A\n## 相关关系\n- 张三 —职业→ 工程师"
    only_a = "## 相关记忆\n- 重要的记忆 A"
    assert render(lines, 1000, "zh") == everything
    assert render(lines, count_tokens(everything), "zh") == everything
    assert render(lines, count_tokens(everything) - 1, "zh") == without_b
    assert render(lines, count_tokens(without_b) - 1, "zh") == only_a
    assert render(lines, count_tokens(only_a) - 1, "zh") == ""
    assert render(lines, 1000) == everything.replace("## 相关记忆", "## Related memories").replace(
        "## 相关关系", "## Related relations"
    )


def test_access_is_tracked_for_returned_memories_only(
    make_manager: Callable[..., MemoryManager], clean: Database, clock: Clock
) -> None:
    manager = make_manager("u")
    kept = manager.add_memory("张三喜欢喝咖啡", "semantic", 0.5)
    manager.add_memory("完全无关的一条事件记录", "episodic", 0.5)
    versions = rows(clean, "SELECT id, xmin::text FROM memories ORDER BY id")
    manager.retrieve_memories("咖啡", memory_types=["semantic"], limit=1)  # logged by the search itself
    manager.retrieve_memories("咖啡", memory_types=["semantic"], limit=1)
    manager.add_memory("张三的咖啡杯在桌上", "working", 0.5)
    mixed = manager.retrieve_memories("咖啡", memory_types=["working", "semantic"], limit=5)  # logged after
    assert {m.memory_type for m in mixed} == {"working", "semantic"}
    assert rows(clean, "SELECT id, xmin::text FROM memories ORDER BY id") == versions, (
        "a search wrote a memory"
    )
    assert rows(clean, "SELECT memory_id, count(*) FROM memory_accesses GROUP BY 1") == [(kept, 3)]
    assert rows(clean, "SELECT id, access_count FROM decay_candidates ORDER BY access_count DESC")[0] == (
        kept,
        3,
    )
    assert maintain(clean, retention_days=30)["accesses_folded"] == 3
    found = rows(clean, "SELECT id, access_count, last_accessed_at FROM memories ORDER BY access_count DESC")
    assert found[0][:2] == (kept, 3) and found[0][2] == clock()
    assert found[1][1:] == (0, None)
    assert rows(clean, "SELECT count(*) FROM memory_accesses") == [(0,)]


def test_retention_score_by_hand(conn: Any) -> None:
    now = "2026-11-30T00:00:00Z"

    def score(importance: float, accessed: str | None, count: int) -> float:
        return float(
            conn.execute(
                "SELECT retention_score(%s, %s, %s, %s)", (importance, accessed, count, now)
            ).fetchone()[0]
        )

    assert score(1.0, None, 0) == pytest.approx(0.4 + 0.5 * 0.4)
    assert score(0.5, "2026-11-30T00:00:00Z", 10) == pytest.approx(0.2 + 0.4 + 0.2)
    assert score(0.0, "2025-11-30T00:00:00Z", 5) == pytest.approx(0.0 + 0.0 + 0.1)
    assert score(0.0, "2026-05-31T12:00:00Z", 20) == pytest.approx(0.5 * 0.4 + 0.2)


def test_decay_evicts_the_lowest_retention_first(
    make_manager: Callable[..., MemoryManager], clean: Database, clock: Clock
) -> None:
    manager = make_manager("u")
    other = make_manager("other")
    ids = {
        name: manager.add_memory(name, "episodic", importance)
        for name, importance in (("重要且常用", 0.9), ("不重要", 0.1), ("中等", 0.5), ("不重要但常用", 0.1))
    }
    other.add_memory("别人的记忆", "episodic", 0.0)
    with clean.connection() as conn:
        conn.execute(
            "UPDATE memories SET access_count = 10, last_accessed_at = %s WHERE id = ANY(%s)",
            (clock(), [ids["重要且常用"], ids["不重要但常用"]]),
        )
    clock.advance(days=30)
    with clean.transaction("u") as conn:
        evicted = apply_decay(conn, "u", 2, clock())
    assert evicted == 2
    alive = {
        r[0] for r in rows(clean, "SELECT content FROM memories WHERE user_id = 'u' AND forgotten_at IS NULL")
    }
    assert alive == {"重要且常用", "不重要但常用"}
    assert rows(clean, "SELECT count(*) FROM memories WHERE user_id = 'other' AND forgotten_at IS NULL") == [
        (1,)
    ]
    with clean.transaction("u") as conn:
        assert apply_decay(conn, "u", 2, clock()) == 0


def test_process_turn_applies_decay(scripted: tuple[list[str], AgentMemorySystem], clean: Database) -> None:
    replies, system = scripted
    system.config = LoopConfig(max_memories=2)
    replies += [
        memories(
            fact("事实一", importance=0.9), fact("事实二", importance=0.2), fact("事实三", importance=0.6)
        )
    ]
    result = system.process_turn("a", "b", "u")
    assert result.evicted == 1
    assert rows(clean, "SELECT content FROM memories WHERE forgotten_at IS NOT NULL") == [("事实二",)]


def test_the_loop_keeps_the_memory_of_its_recent_users_only(clean: Database) -> None:
    from hello_pgmem.loop.system import MAX_USERS

    loop = AgentMemorySystem(
        ChatClient("fake", base_url="http://127.0.0.1:9", max_retries=0),
        database=clean,
        embedder=HashingEmbedder(),
    )
    first = loop.manager("user_0")
    assert loop.manager("user_0") is first and first.db is clean is loop.db
    for number in range(1, MAX_USERS + 1):
        loop.manager(f"user_{number}")
    assert len(loop._managers) == MAX_USERS and "user_0" not in loop._managers
    assert loop.manager("user_0") is not first, "made again when asked for again"
