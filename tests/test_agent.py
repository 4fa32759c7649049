"""SimpleAgent: function calling with the memory tool, through the real openai client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from hello_pgmem import ConfigurationError, Database, HashingEmbedder, MemoryTool, Settings, ToolRegistry
from hello_pgmem.agent import HelloAgentsLLM, SimpleAgent
from hello_pgmem.llm import ChatClient
from tests.fake_openai import FakeOpenAI, serve


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
            }
        ],
    }


def script(body: dict[str, Any]) -> dict[str, Any] | str:
    """A model that stores what the user says about themself and recalls it when asked."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        result = last["content"]
        if "记忆已添加" in result:
            return "好的，张三，我已经记住了：你是一名Python开发者。"
        if "张三" in result and "Python开发者" in result:
            return "你是张三，一名Python开发者。"
        return "我还不知道你是谁。"
    if "请记住" in last["content"]:
        assert {t["function"]["name"] for t in body["tools"]} == {"memory"}
        return tool_call(
            "memory",
            {
                "action": "add",
                "content": "用户叫张三，是一名Python开发者",
                "memory_type": "semantic",
                "importance": 0.9,
            },
        )
    if "我是谁" in last["content"]:
        return tool_call("memory", {"action": "search", "query": "用户叫什么名字 Python开发者"})
    return "你好！"


@pytest.fixture()
def llm() -> Iterator[tuple[FakeOpenAI, ChatClient]]:
    with serve(FakeOpenAI(chat=script)) as fake:
        yield fake, ChatClient("fake", base_url=fake.base_url, api_key="k", max_retries=0)


def agent_for(user: str, db: Database, embedder: HashingEmbedder, llm: ChatClient) -> SimpleAgent:
    registry = ToolRegistry(language="zh")  # the reference's conversation, in its Chinese
    registry.register_tool(MemoryTool(user_id=user, database=db, embedder=embedder, language="zh"))
    return SimpleAgent(name="记忆助手", llm=llm, tool_registry=registry)


def test_the_reference_demo_across_two_agent_instances(
    llm: tuple[FakeOpenAI, ChatClient], clean: Database, embedder: HashingEmbedder
) -> None:
    fake, client = llm
    first = agent_for("user123", clean, embedder, client)
    reply = first.run("你好！请记住我叫张三，我是一名Python开发者")
    assert reply == "好的，张三，我已经记住了：你是一名Python开发者。"
    assert first.last_trace[0]["tool"] == "memory" and first.last_trace[0]["result"].startswith(
        "✅ 记忆已添加"
    )
    second = agent_for("user123", clean, embedder, client)  # a new instance: no shared history
    assert second.history == []
    assert second.run("我是谁？") == "你是张三，一名Python开发者。"
    assert "用户叫张三，是一名Python开发者" in second.last_trace[0]["result"]
    stranger = agent_for("someone_else", clean, embedder, client)
    assert stranger.run("我是谁？") == "我还不知道你是谁。"
    # the full loop went through the wire: request, tool call, tool result, final answer
    tool_messages = [m for r in fake.requests for m in r["body"]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 3 and all(m["tool_call_id"] == "call_1" for m in tool_messages)


def test_bad_tool_arguments_go_back_to_the_model(clean: Database, embedder: HashingEmbedder) -> None:
    answers: list[dict[str, Any] | str] = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "memory", "arguments": "{not json"}}
            ],
        },
        "参数有误，已停止。",
    ]
    with serve(FakeOpenAI(chat=lambda body: answers.pop(0))) as fake:
        agent = agent_for("u", clean, embedder, ChatClient("fake", base_url=fake.base_url, max_retries=0))
        assert agent.run("随便") == "参数有误，已停止。"
        assert agent.last_trace[0]["result"].startswith("❌ 工具参数不是合法的 JSON")


def test_the_loop_is_bounded(clean: Database, embedder: HashingEmbedder) -> None:
    def always_call(body: dict[str, Any]) -> dict[str, Any] | str:
        if body.get("tools") is None:
            return "我就用已有的结果回答。"
        return tool_call("memory", {"action": "stats"})

    with serve(FakeOpenAI(chat=always_call)) as fake:
        agent = agent_for("u", clean, embedder, ChatClient("fake", base_url=fake.base_url, max_retries=0))
        agent.max_steps = 3
        assert agent.run("统计一下") == "我就用已有的结果回答。"
        assert len(agent.last_trace) == 3 and len(fake.requests) == 4


def test_history_is_short_and_in_process(
    llm: tuple[FakeOpenAI, ChatClient], clean: Database, embedder: HashingEmbedder
) -> None:
    _, client = llm
    agent = agent_for("u", clean, embedder, client)
    agent.history_turns = 2
    for i in range(4):
        agent.run(f"第{i}句")
    assert len(agent.history) == 4 and agent.history[0]["content"] == "第2句"


def test_hello_agents_llm_needs_a_model() -> None:
    with pytest.raises(ConfigurationError, match="LLM_MODEL_ID"):
        HelloAgentsLLM(settings=Settings(llm_model_id=None))
