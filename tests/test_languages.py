"""One language setting: every text the tools, the MCP server, the agent and the command line give
an agent or a user is English by default (PGMEM_LANGUAGE=en), and Chinese with zh."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hello_pgmem import Database, HashingEmbedder, Settings
from hello_pgmem.cli import main
from hello_pgmem.core.i18n import Language, has_cjk
from hello_pgmem.tools import MemoryTool, RAGTool, ToolRegistry
from hello_pgmem.tools.base import Tool


def descriptions(tool: Tool) -> list[str]:
    """Every description an agent reads of a tool: the tool, its actions and their parameters."""
    found = []
    for schema in [tool.to_openai_schema()] + [t.to_openai_schema() for t in tool.get_expanded_tools()]:
        function = schema["function"]
        found.append(function["description"])
        found += [p.get("description", "") for p in function["parameters"]["properties"].values()]
    return found


@pytest.fixture()
def tools(clean: Database, embedder: HashingEmbedder) -> Callable[[Language], tuple[MemoryTool, RAGTool]]:
    def make(language: Language) -> tuple[MemoryTool, RAGTool]:
        memory = MemoryTool(f"speaker_{language}", database=clean, embedder=embedder, language=language)
        rag = RAGTool(
            rag_namespace=f"speaker_{language}", database=clean, embedder=embedder, language=language
        )
        return memory, rag

    return make


def every_action(memory: MemoryTool, rag: RAGTool) -> Iterator[str]:
    """Each action's text, on English input, the failures and refusals among them."""
    added = memory.run(
        "add", content="Alice is a Python developer and knows PostgreSQL", memory_type="semantic"
    )
    yield added
    memory_id = added.split("ID: ")[1].rstrip(")")
    yield memory.run("add", content="Lunch with Bob on Friday", memory_type="episodic", importance=0.9)
    yield memory.run("add", content="draft the budget", memory_type="working")
    yield memory.run("search", query="Python developer")
    yield memory.run("search", query="nothing like this at all")
    yield memory.run("sessions", query="Python developer")
    yield memory.run("sessions", query="nothing like this at all")
    yield memory.run("summary")
    yield memory.run("stats")
    yield memory.run("update", memory_id=memory_id, importance=0.7)
    yield memory.run("update", memory_id="00000000-0000-0000-0000-000000000000", importance=0.7)
    yield memory.run("graph", entity="Alice")
    yield memory.run("graph", entity="Alice", target="PostgreSQL")
    yield memory.run("graph", memory_id=memory_id)
    yield memory.run("graph")
    yield memory.run("consolidate", from_type="working", to_type="episodic", importance_threshold=0.1)
    yield memory.run("forget", strategy="importance_based", threshold=0.2)
    yield memory.run("restore")
    yield memory.run("remove", memory_id=memory_id)
    yield memory.run("add", content="x", importance=True)
    yield memory.run("add", content="x", importance="high")
    yield memory.run("no_such_action")
    yield memory.run("clear_all")
    yield memory.run("clear_all", confirm=True)
    yield rag.run("add_text", text="# Deploying\n\nRun make demo, then make test.", document_id="guide")
    yield rag.run("add_text", text="   ")
    yield rag.run("add_document", file_path="/no/such/file.md")
    yield rag.run("search", query="how to deploy")
    yield rag.run("search", query="")
    yield rag.run("search", query="x", limit=0)
    yield rag.run("ask", question="How do I deploy?")
    yield rag.run("ask", question="")
    yield rag.run("stats")
    yield rag.run("list_documents")
    yield rag.run("remove_document", document_id="nothing")
    yield rag.run("clear")
    yield rag.run("clear", confirm=True)
    yield rag.run("ask", question="How do I deploy?")
    yield rag.run("list_documents")
    yield ToolRegistry(language=memory.language).execute_tool("no_such_tool", {})


def test_english_by_default_and_no_chinese_anywhere(
    tools: Callable[[Language], tuple[MemoryTool, RAGTool]], clean: Database, embedder: HashingEmbedder
) -> None:
    memory = MemoryTool("default_speaker", database=clean, embedder=embedder)
    assert memory.language == "en" and RAGTool(database=clean, embedder=embedder).language == "en"
    memory, rag = tools("en")
    for tool in (memory, rag):
        leaking = [d for d in descriptions(tool) if has_cjk(d)]
        assert not leaking, leaking
    for text in every_action(memory, rag):
        assert not has_cjk(text), text


def test_chinese_with_zh_everywhere(tools: Callable[[Language], tuple[MemoryTool, RAGTool]]) -> None:
    memory, rag = tools("zh")
    for tool in (memory, rag):
        english_only = [d for d in descriptions(tool) if d and not has_cjk(d)]
        assert not english_only, english_only
    for text in every_action(memory, rag):
        assert has_cjk(text), text


def test_the_setting_is_pgmem_language(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    monkeypatch.setenv("PGMEM_LANGUAGE", "zh")
    assert Settings().language == "zh"
    tool = MemoryTool("u", settings=Settings(database_url=settings.database_url))
    assert tool.language == "zh" and has_cjk(tool.description)
    monkeypatch.setenv("PGMEM_LANGUAGE", "fr")
    with pytest.raises(ValueError, match="PGMEM_LANGUAGE"):
        Settings()


def test_the_command_line_passes_its_language_to_the_tools_and_answers(
    settings: Settings, clean: Database, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    monkeypatch.setenv("PGMEM_USER", "speaker_cli")
    monkeypatch.delenv("LLM_MODEL_ID", raising=False)
    assert main(["add", "Alice is a Python developer", "--type", "semantic"]) == 0
    capsys.readouterr()
    kb_text = "# Deploying\n\nRun make demo, then make test."
    from hello_pgmem import KnowledgeBase

    KnowledgeBase(clean, HashingEmbedder(), "default").add_text(kb_text, "guide")
    assert main(["--json", "ask", "how to deploy"]) == 0
    answer: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert answer["notice"].startswith("no chat model is configured") and not has_cjk(json.dumps(answer))
    assert main(["--language", "zh", "--json", "ask", "how to deploy"]) == 0
    assert "未配置大语言模型" in json.loads(capsys.readouterr().out)["notice"]
    assert main(["--language", "zh", "summary"]) == 0
    assert has_cjk(capsys.readouterr().out)
