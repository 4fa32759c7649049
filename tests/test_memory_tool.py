"""The memory tool: the reference demo, every calling style, full ids, isolation, bad input.

These tests hold the tool to the reference's Chinese wording (``language="zh"``);
tests/test_languages.py checks the English default."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from hello_pgmem import Database
from hello_pgmem.tools import MemoryTool, ToolRegistry
from hello_pgmem.tools.base import ToolText, succeeded
from tests.conftest import table_digest

PEOPLE = [
    ("用户张三是一名Python开发者，专注于机器学习和数据分析", 0.8),
    ("李四是前端工程师，擅长React和Vue.js开发", 0.7),
    ("王五是产品经理，负责用户体验设计和需求分析", 0.6),
]
UUID_RE = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


@pytest.fixture()
def make_tool(make_tool: Callable[..., MemoryTool]) -> Callable[..., MemoryTool]:
    """The conftest's tools, speaking the reference's Chinese."""

    def make(user_id: str = "user123", **kwargs: Any) -> MemoryTool:
        kwargs.setdefault("language", "zh")
        return make_tool(user_id, **kwargs)

    return make


def added_id(text: str) -> str:
    match = re.fullmatch(rf"✅ 记忆已添加 \(ID: ({UUID_RE})\)(；以下参数已存入元数据: .*)?", text)
    assert match, text
    return match.group(1)


@pytest.mark.parametrize("memory_type", ["episodic", "working", "semantic"])
def test_reference_demo(make_tool: Callable[..., MemoryTool], memory_type: str) -> None:
    tool = make_tool()
    for content, importance in PEOPLE:
        added_id(
            tool.run(
                {
                    "action": "add",
                    "content": content,
                    "memory_type": memory_type,
                    "importance": importance,
                }
            )
        )
    result = tool.run({"action": "search", "query": "前端工程师", "limit": 3})
    lines = result.splitlines()
    assert re.fullmatch(r"🔍 找到 \d 条相关记忆:", lines[0])
    assert "李四是前端工程师" in lines[1]
    assert re.search(rf"\(重要性: 0\.70\) \[ID: {UUID_RE}\]$", lines[1])
    summary = tool.run({"action": "summary"})
    assert "📊 记忆系统摘要" in summary and "总记忆数: 3" in summary
    label = {"episodic": "情景记忆", "working": "工作记忆", "semantic": "语义记忆"}[memory_type]
    assert f"  • {label}: 3 条 (平均重要性: 0.70)" in summary
    assert "⭐ 重要记忆 (前3条):" in summary
    assert "  1. 用户张三是一名Python开发者，专注于机器学习和数据分析 (重要性: 0.80)" in summary


def test_calling_styles(make_tool: Callable[..., MemoryTool]) -> None:
    tool = make_tool()
    added_id(tool.run({"action": "add", "content": "风格一", "memory_type": "episodic"}))
    added_id(tool.run("add", content="风格二", memory_type="episodic"))
    added_id(tool.execute("add", content="风格三", memory_type="episodic"))
    added_id(tool.run(action="add", content="风格四", memory_type="episodic", importance="0.9"))
    assert "总记忆数: 4" in tool.run("stats")


def test_expanded_tools(make_tool: Callable[..., MemoryTool]) -> None:
    registry = ToolRegistry()
    registry.register_tool(make_tool(expandable=True))
    names = registry.list_tools()
    assert {
        "memory_add",
        "memory_search",
        "memory_summary",
        "memory_update",
        "memory_remove",
        "memory_forget",
        "memory_consolidate",
        "memory_restore",
        "memory_clear_all",
        "memory_stats",
        "memory_graph",
        "memory_sessions",
        "memory_history",
    } == set(names)
    memory_id = added_id(
        registry.execute_tool("memory_add", {"content": "展开调用", "memory_type": "episodic"})
    )
    assert memory_id in registry.execute_tool("memory_search", {"query": "展开调用"})
    schemas = {s["function"]["name"]: s["function"] for s in registry.to_openai_tools()}
    assert schemas["memory_add"]["parameters"]["required"] == ["content"]
    assert schemas["memory_update"]["parameters"]["required"] == ["memory_id"]
    assert schemas["memory_search"]["parameters"]["properties"]["limit"] == {
        "type": ["integer", "null"],  # null: left out, the default applies
        "minimum": 1,
        "maximum": 200,
        "default": 5,
        "description": "最多返回条数",
    }


def test_single_tool_schema(make_tool: Callable[..., MemoryTool]) -> None:
    schema = make_tool().to_openai_schema()["function"]
    assert schema["name"] == "memory"
    assert schema["parameters"]["required"] == ["action"]
    properties = schema["parameters"]["properties"]
    assert properties["action"]["enum"] == [
        "add",
        "clear_all",
        "consolidate",
        "forget",
        "graph",
        "history",
        "remove",
        "restore",
        "search",
        "sessions",
        "stats",
        "summary",
        "update",
    ]
    assert {
        "content",
        "query",
        "memory_type",
        "memory_types",
        "importance",
        "limit",
        "memory_id",
        "file_path",
        "modality",
        "strategy",
        "threshold",
        "max_age_days",
        "from_type",
        "to_type",
        "importance_threshold",
        "min_importance",
    } <= set(properties)


def test_sessions_gives_whole_conversations_in_order(make_tool: Callable[..., MemoryTool]) -> None:
    """The session that talks about the question comes first, whole and in the order it was
    written, its matching memories marked; the data carries the same."""
    tool = make_tool(language="en")
    manager = tool.memory_manager
    chat = {
        "kitchen": ["We should redo the kitchen", "The oak cabinets were too dark", "Fine, white ones then"],
        "trip": ["Let us book the ferry to the island", "The kitchen at the hostel is shared"],
        "work": ["The quarterly report is due Friday", "Ask Carol for the figures"],
    }
    for session, turns in chat.items():
        manager.add_memories(turns, "episodic", session_ids=[session] * len(turns))
    text = tool.run("sessions", query="what did we decide about the kitchen cabinets?", limit=2)
    assert isinstance(text, ToolText) and text.data is not None
    found = text.data["sessions"]
    assert [s["session_id"] for s in found] == ["kitchen", "trip"]
    assert [m["content"] for m in found[0]["memories"]] == chat["kitchen"]
    assert len(found[0]["hits"]) >= 2
    assert text.index("Session kitchen") < text.index("Session trip")
    assert "* [" in text and "Fine, white ones then" in text
    assert "No conversation" in make_tool("someone_else", language="en").run("sessions", query="kitchen")
    assert tool.run("sessions", query="kitchen", limit=0).startswith("❌")


def test_update_and_remove_by_full_id_and_prefix(make_tool: Callable[..., MemoryTool]) -> None:
    tool = make_tool()
    memory_id = added_id(tool.run("add", content="张三喜欢咖啡", memory_type="semantic"))
    assert tool.run("update", memory_id=memory_id, content="张三喜欢绿茶") == "✅ 记忆已更新"
    assert "张三喜欢绿茶" in tool.run("search", query="绿茶")
    assert tool.run("remove", memory_id=memory_id[:8]) == "✅ 记忆已删除"
    assert tool.run("search", query="绿茶") == "🔍 未找到与 '绿茶' 相关的记忆"
    for answer in (
        tool.run("update", memory_id=memory_id, content="x"),
        tool.run("remove", memory_id=memory_id),
    ):
        assert answer == f"❌ 未找到记忆: {memory_id}" and not succeeded(answer), answer


def test_extra_add_parameters_become_metadata(make_tool: Callable[..., MemoryTool]) -> None:
    tool = make_tool()
    answer = tool.run(
        "add",
        content="2024年3月15日，用户张三完成了第一个Python项目",
        memory_type="episodic",
        importance=0.8,
        event_type="milestone",
        location="在线学习平台",
    )
    assert answer.endswith("；以下参数已存入元数据: event_type, location"), "the reply says where they went"
    memory_id = added_id(answer)
    item = tool.memory_manager.get_memory(memory_id)
    assert item is not None
    assert item.metadata["event_type"] == "milestone" and item.metadata["location"] == "在线学习平台"
    assert item.session_id == tool.current_session_id
    assert re.fullmatch(r"session_\d{8}_\d{6}", tool.current_session_id)


def test_forget_and_consolidate_messages(make_tool: Callable[..., MemoryTool]) -> None:
    tool = make_tool()
    tool.run("add", content="很重要的工作记忆", importance=0.9)
    tool.run("add", content="不重要", memory_type="episodic", importance=0.05)
    assert tool.run("consolidate") == "🔄 已整合 1 条记忆为长期记忆（working → episodic，阈值=0.7）"
    assert (
        tool.run("forget", strategy="importance_based", threshold=0.1)
        == "🧹 已遗忘 1 条记忆（策略: importance_based）"
    )
    assert tool.run("clear_all").startswith("⚠️ 危险操作") and "总记忆数: 1" in tool.run("stats")
    for almost in ("maybe", "yes", "true", 1):  # only true itself goes ahead
        assert tool.run("clear_all", confirm=almost).startswith("❌ 参数错误: confirm")
    assert "总记忆数: 1" in tool.run("stats")
    assert tool.run("clear_all", confirm=True) == "🧽 已清空所有记忆"
    assert "总记忆数: 0" in tool.run("stats")


def test_a_second_user_cannot_reach_the_first(make_tool: Callable[..., MemoryTool], clean: Database) -> None:
    alice, mallory = make_tool("alice"), make_tool("mallory")
    ids = [
        added_id(alice.run("add", content=c, memory_type=t, importance=0.9))
        for c, t in (
            ("alice 的工作记忆", "working"),
            ("alice 的秘密事件", "episodic"),
            ("alice 的知识", "semantic"),
        )
    ]
    before = table_digest(clean)
    assert mallory.run("search", query="alice 的秘密") == "🔍 未找到与 'alice 的秘密' 相关的记忆"
    for memory_id in ids:
        assert mallory.run("update", memory_id=memory_id, content="hacked").startswith(("⚠️", "❌"))
        assert mallory.run("remove", memory_id=memory_id).startswith(("⚠️", "❌"))
        assert mallory.run("remove", memory_id=memory_id[:8]).startswith("❌")
    assert mallory.run("forget", strategy="importance_based", threshold=1.0, confirm=True).startswith(
        "🧹 已遗忘 0 条"
    )
    assert mallory.run("restore", memory_ids=ids).startswith("❌"), "another user's ids are not found"
    assert mallory.run("consolidate", importance_threshold=0.0).startswith("🔄 已整合 0 条")
    assert mallory.run(
        "consolidate", from_type="episodic", to_type="semantic", importance_threshold=0.0
    ).startswith("🔄 已整合 0 条")
    assert "总记忆数: 0" in mallory.run("summary")
    mallory.run("clear_all", confirm=True)
    assert table_digest(clean) == before
    assert "总记忆数: 3" in alice.run("stats")


BAD_CALLS: list[tuple[dict[str, Any], str]] = [
    ({"action": "add"}, "content"),
    ({"action": "add", "content": ""}, "content"),
    ({"action": "add", "content": "x", "importance": 7}, "importance"),
    ({"action": "add", "content": "x", "importance": "high"}, "importance"),
    ({"action": "add", "content": "x", "memory_type": "dream"}, "memory_type"),
    (
        {"action": "add", "content": "x", "memory_type": "perceptual", "file_path": "a.png"},
        "memory_type",
    ),
    ({"action": "add", "content": "x", "metadata": "not a dict"}, "metadata"),
    ({"action": "add", "content": 12}, "content"),
    ({"action": "search"}, "query"),
    ({"action": "search", "query": "x", "limit": -1}, "limit"),
    ({"action": "search", "query": "x", "limit": 10**9}, "limit"),
    ({"action": "search", "query": "x", "memory_type": "dream"}, "memory_types"),
    ({"action": "search", "query": "x", "min_importance": "NaN"}, "min_importance"),
    ({"action": "summary", "limit": 0}, "limit"),
    ({"action": "update"}, "memory_id"),
    ({"action": "update", "memory_id": "12"}, "memory_id"),
    (
        {"action": "update", "memory_id": "00000000-0000-4000-8000-000000000000", "importance": -1},
        "importance",
    ),
    ({"action": "remove", "memory_id": "' OR 1=1 --"}, "memory_id"),
    ({"action": "forget", "strategy": "everything"}, "strategy"),
    ({"action": "forget", "threshold": 2}, "threshold"),
    ({"action": "forget", "strategy": "time_based", "max_age_days": -3}, "max_age_days"),
    ({"action": "consolidate", "from_type": "semantic", "to_type": "working"}, "to_type"),
    ({"action": "consolidate", "importance_threshold": "x"}, "importance_threshold"),
    ({"action": "stats", "unexpected": 1}, "unexpected"),
    ({"action": "explode"}, "explode"),
    ({"action": None}, "None"),
]


@pytest.mark.parametrize(("call", "field"), BAD_CALLS)
def test_bad_input_is_a_clear_message_and_changes_nothing(
    make_tool: Callable[..., MemoryTool], clean: Database, call: dict[str, Any], field: str
) -> None:
    tool = make_tool()
    tool.run("add", content="已有的工作记忆", importance=0.8)
    tool.run("add", content="已有的事件", memory_type="episodic", importance=0.8)
    before = table_digest(clean)
    result = tool.run(call)
    assert result.startswith("❌"), result
    assert field in result
    assert table_digest(clean) == before


def test_unreachable_database_is_a_message(make_tool: Callable[..., MemoryTool]) -> None:
    from hello_pgmem import Settings

    tool = MemoryTool(
        "u",
        settings=Settings(database_url="postgresql://postgres@127.0.0.1:1/x", connect_timeout_s=1),
        language="zh",
    )
    result = tool.run("add", content="x")
    assert result.startswith("❌ 添加记忆失败: cannot connect to the database")


def test_english_counts_agree_with_their_number(make_tool: Callable[..., MemoryTool]) -> None:
    """One memory found is "1 related memory", one relation "1 step"; more are plural."""
    tool = make_tool("counter", language="en")
    tool.run("add", content="Alice works at Acme", memory_type="semantic")
    assert tool.run("search", query="Acme").splitlines()[0] == "🔍 Found 1 related memory:"
    tool.run("add", content="Bob works at Acme", memory_type="semantic")
    assert tool.run("search", query="Acme").splitlines()[0] == "🔍 Found 2 related memories:"
    one = tool.run("graph", entity="Alice", target="Acme")
    assert "(1 step)" in one, one
    two = tool.run("graph", entity="Alice", target="Bob")
    assert "(2 steps)" in two, two


def test_arguments_that_contradict_each_other_are_refused(
    make_tool: Callable[..., MemoryTool], clean: Database
) -> None:
    """Two names of one argument given different values, or an argument a call's form ignores, are
    refused by name instead of one being dropped without a word."""
    from hello_pgmem import HashingEmbedder
    from hello_pgmem.tools.base import succeeded
    from hello_pgmem.tools.rag_tool import RAGTool

    tool = make_tool()
    memory_id = added_id(tool.run("add", content="Kim lives in Oslo", memory_type="semantic"))
    answer = tool.run("graph", memory_id=memory_id, valid_at="2020-01-01T00:00:00+00:00")
    assert not succeeded(answer) and "valid_at: a memory's entities are read with memory_id alone" in answer
    rag = RAGTool(database=clean, embedder=HashingEmbedder())
    for action, first in (("search", "question"), ("ask", "query")):
        answer = rag.run(action, query="ferries", question="trains")
        assert not succeeded(answer) and f"{first}: another name of" in answer, answer
    assert succeeded(rag.run("search", query="ferries", question="ferries"))
