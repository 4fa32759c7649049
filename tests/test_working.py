"""Working memory: TTL, capacity and token budget, scoring, forgetting; with a test clock."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hello_pgmem import InvalidInputError
from hello_pgmem.core.models import MemoryConfig
from hello_pgmem.memory import MemoryManager
from tests.conftest import Clock

PEOPLE = [
    ("用户张三是一名Python开发者，专注于机器学习和数据分析", 0.8),
    ("李四是前端工程师，擅长React和Vue.js开发", 0.7),
    ("王五是产品经理，负责用户体验设计和需求分析", 0.6),
]


def contents(manager: MemoryManager) -> set[str]:
    return {item.content for item in manager.list_memories("working")}


def test_reference_demo_in_working_memory(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager(session_id="s1")
    for content, importance in PEOPLE:
        manager.add_memory(content, "working", importance)
    results = manager.retrieve_memories("前端工程师", memory_types=["working"], limit=3)
    assert results[0].content.startswith("李四")
    assert manager.get_memory_stats().memories_by_type["working"].count == 3


DAY_TTL = MemoryConfig(working_memory_ttl_minutes=24 * 60)


def test_scores_follow_the_formula(make_manager: Callable[..., MemoryManager], clock: Clock) -> None:
    manager = make_manager(config=DAY_TTL)
    manager.add_memory("李四是前端工程师，擅长React和Vue.js开发", "working", 0.7)
    clock.advance(hours=6)
    [hit] = manager.retrieve_memories("前端工程师", ["working"])
    assert hit.score is not None
    meta = {**hit.components, "relevance_score": hit.score}
    assert meta["time_decay"] == pytest.approx(0.95)
    assert meta["importance_weight"] == pytest.approx(0.8 + 0.7 * 0.4)
    base = (
        meta["tfidf_score"] * 0.7 + meta["keyword_score"] * 0.3
        if meta["tfidf_score"] > 0
        else meta["keyword_score"]
    )
    assert meta["relevance_score"] == pytest.approx(base * 0.95 * meta["importance_weight"])
    assert meta["keyword_score"] == pytest.approx(5 / len(hit.content))


def test_only_positive_scores_are_returned(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager()
    manager.add_memory("完全无关的内容", "working", 0.9)
    assert manager.retrieve_memories("前端工程师", ["working"]) == []


def test_ttl_expiry(make_manager: Callable[..., MemoryManager], clock: Clock) -> None:
    manager = make_manager(config=MemoryConfig(working_memory_ttl_minutes=60))
    manager.add_memory("旧的工作记忆", "working", 0.9)
    clock.advance(minutes=59)
    assert contents(manager) == {"旧的工作记忆"}
    clock.advance(minutes=2)
    assert contents(manager) == set()
    manager.add_memory("新的工作记忆", "working", 0.5)  # the add sweeps expired rows first
    with manager.db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM working_memories").fetchone() == (1,)


def test_capacity_evicts_the_lowest_priority(
    make_manager: Callable[..., MemoryManager], clock: Clock
) -> None:
    manager = make_manager(config=MemoryConfig(working_memory_capacity=3, working_memory_ttl_minutes=24 * 60))
    manager.add_memory("重要 A", "working", 0.9)
    manager.add_memory("次要 B", "working", 0.2)
    manager.add_memory("中等 C", "working", 0.5)
    clock.advance(hours=12)  # older items decay: 0.9 * 0.9025 still beats the new 0.6
    manager.add_memory("新的 D", "working", 0.6)
    assert contents(manager) == {"重要 A", "中等 C", "新的 D"}


def test_token_budget_evicts_until_it_holds(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager(config=MemoryConfig(working_memory_tokens=20))
    manager.add_memory("一二三四五六七八", "working", 0.9)  # 8 tokens
    manager.add_memory("甲乙丙丁戊己庚辛", "working", 0.3)  # 8 tokens
    manager.add_memory("子丑寅卯辰巳午未", "working", 0.6)  # 8 tokens: 24 > 20, evict 0.3
    assert contents(manager) == {"一二三四五六七八", "子丑寅卯辰巳午未"}
    assert manager.get_memory_stats().memories_by_type["working"].total_tokens == 16
    with pytest.raises(InvalidInputError, match="more than the working-memory budget of 20"):
        manager.add_memory("字" * 21, "working", 0.9)


def test_forget_strategies(make_manager: Callable[..., MemoryManager], clock: Clock) -> None:
    manager = make_manager(
        enable_episodic=False,
        enable_semantic=False,
        config=MemoryConfig(working_memory_capacity=10),
    )
    manager.add_memory("低重要性", "working", 0.05)
    manager.add_memory("高重要性", "working", 0.9)
    assert manager.forget_memories("importance_based", threshold=0.1) == 1
    assert contents(manager) == {"高重要性"}

    clock.advance(hours=1)
    manager.add_memory("新的", "working", 0.5)
    assert manager.forget_memories("time_based", max_age_days=1 / 48) == 1  # older than 30 minutes
    assert contents(manager) == {"新的"}


def test_capacity_forget(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager(
        enable_episodic=False, enable_semantic=False, config=MemoryConfig(working_memory_capacity=5)
    )
    for i in range(5):
        manager.add_memory(f"记忆 {i}", "working", 0.1 * (i + 1))
    smaller = make_manager(
        session_id=manager.session_id,
        enable_episodic=False,
        enable_semantic=False,
        config=MemoryConfig(working_memory_capacity=2),
    )
    assert smaller.forget_memories("capacity_based") == 3
    assert contents(manager) == {"记忆 3", "记忆 4"}


def test_sessions_are_separate(make_manager: Callable[..., MemoryManager]) -> None:
    first = make_manager(session_id="s1")
    second = make_manager(session_id="s2")
    first.add_memory("会话一的内容", "working", 0.5)
    assert contents(second) == set()
    assert contents(first) == {"会话一的内容"}


def test_tfidf_scores_are_scikit_learns() -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    from hello_pgmem.core.text import tfidf_scores, tokenize

    query = "前端工程师 React"
    contents = ["李四是前端工程师，擅长React和Vue.js开发", "今天的天气很好", "React React React", "。，！"]
    matrix = TfidfVectorizer(analyzer=tokenize).fit_transform([query, *contents])
    expected = cosine_similarity(matrix[0], matrix[1:])[0]
    assert tfidf_scores(query, contents) == pytest.approx(list(expected), abs=1e-12)
    assert tfidf_scores("。", ["，"]) == [0.0]
