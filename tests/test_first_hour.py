"""What a new user meets in the first hour: clear one-line errors instead of tracebacks, inputs
refused with the right field, and the command line in one language."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from hello_pgmem import Database, GraphError, HashingEmbedder, InvalidInputError, KnowledgeBase, Settings
from hello_pgmem.cli import main
from hello_pgmem.memory import MemoryManager
from hello_pgmem.tools import MemoryTool, RAGTool
from tests.conftest import row_counts, table_digest
from tests.media import sunset

UNREACHABLE = "postgresql://postgres@127.0.0.1:1/pgmem"


@pytest.fixture()
def env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    monkeypatch.setenv("PGMEM_USER", "first_hour")
    return settings


def one_error_line(err: str) -> dict[str, str]:
    """The CLI's error under --json: one JSON object on one line."""
    [line] = err.strip().splitlines()
    payload: dict[str, str] = json.loads(line)
    return payload


def test_migrate_against_a_server_that_cannot_be_reached(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", UNREACHABLE)
    assert main(["migrate"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: cannot connect to the database") and "Traceback" not in err
    assert 'hint: start the development database with "hello-pgmem db up"' in err
    assert len(err.strip().splitlines()) == 2, "one line of error, one of hint"
    assert main(["--json", "migrate"]) == 1
    payload = one_error_line(capsys.readouterr().err)
    assert payload["error"] == "DatabaseUnavailableError" and "DATABASE_URL" in payload["hint"]


def test_a_database_url_that_is_not_a_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", "not a url at all")
    for command in (["info"], ["migrate"], ["search", "x"], ["doctor"]):
        assert main(command) == 1
        err = capsys.readouterr().err
        assert err.startswith(
            "error: invalid settings: DATABASE_URL: DATABASE_URL must be a postgresql:// URL"
        )
        assert "Traceback" not in err and "ProgrammingError" not in err
    with pytest.raises(ValueError, match="DATABASE_URL must be"):
        Settings(database_url="not a url at all")


def test_import_of_a_file_that_is_not_utf8(
    env: Settings, clean: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = tmp_path / "export.jsonl"
    export.write_bytes(b'{"kind": "memory", "content": "caf\xe9"}\n')
    before = row_counts(clean)
    assert main(["import", str(export)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: source: must be UTF-8 JSON Lines, byte") and "Traceback" not in err
    assert row_counts(clean) == before


def test_cypher_errors_are_graph_errors(clean: Database, embedder: HashingEmbedder) -> None:
    manager = MemoryManager(user_id="alice", database=clean, embedder=embedder)
    with pytest.raises(GraphError, match="syntax error"):
        manager.cypher("MATCH (e:Entity {user_id: $user_id} RETURN e")
    with pytest.raises(GraphError, match="could not find rte for nothing"):
        manager.cypher("MATCH (e:Entity {user_id: $user_id}) RETURN nothing")
    assert manager.cypher("MATCH (e:Entity {user_id: $user_id}) RETURN e") == []


def test_errors_under_json_name_the_field(
    env: Settings, clean: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--json", "add", "x", "--importance", "3"]) == 1
    payload = one_error_line(capsys.readouterr().err)
    assert (payload["error"], payload["field"]) == ("InvalidInputError", "importance")
    assert payload["rule"].startswith("must be a number between 0 and 1")
    assert main(["--json", "add", "x", "--type", "dream"]) == 2
    assert one_error_line(capsys.readouterr().err)["error"] == "usage"


def test_a_huge_query_is_refused_as_query(make_manager: Callable[..., MemoryManager]) -> None:
    with pytest.raises(InvalidInputError) as caught:
        make_manager().retrieve_memories("x" * 1_000_000)
    assert caught.value.field == "query" and "at most 20000 characters" in caught.value.rule


def test_booleans_are_not_numbers(make_tool: Callable[..., MemoryTool], clean: Database) -> None:
    tool = make_tool()
    before = table_digest(clean)
    assert (
        tool.run("add", content="x", importance=True)
        == "❌ invalid input: importance: must be a number, not true or false"
    )
    assert tool.run("search", query="x", limit=False).startswith("❌ invalid input: limit")
    assert table_digest(clean) == before
    with pytest.raises(InvalidInputError, match="importance"):
        MemoryManager(user_id="u", database=clean).add_memory("x", "working", True)


def test_ingest_with_a_bad_chunk_size_is_a_usage_error(
    env: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.md").write_text("# A\n\ntext", encoding="utf-8")
    assert main(["ingest", str(tmp_path), "--chunk-size", "0"]) == 2
    assert "--chunk-size" in capsys.readouterr().err
    assert main(["ingest", str(tmp_path), "--chunk-size", "100", "--chunk-overlap", "80"]) == 2
    assert "--chunk-overlap" in capsys.readouterr().err


@pytest.mark.parametrize("path", ["/dev/null", "/tmp"])
def test_a_path_that_is_not_a_regular_file(path: str, clean: Database, embedder: HashingEmbedder) -> None:
    kb = KnowledgeBase(clean, embedder, "files")
    with pytest.raises(InvalidInputError, match="is not a regular file"):
        kb.add_document(path)
    widened = RAGTool(database=clean, embedder=embedder, files_root=Path("/"))
    assert "is not a regular file" in widened.run("add_document", file_path=path)


def test_perceptual_memory_stores_the_absolute_path_and_refuses_unknown_binaries(
    make_manager: Callable[..., MemoryManager], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = make_manager(enable_perceptual=True)
    image = sunset(tmp_path / "sunset.png")
    monkeypatch.chdir(tmp_path)
    memory_id = manager.add_memory("夕阳", "perceptual", 0.5, {"file_path": "sunset.png"})
    stored = manager.get_memory(memory_id)
    assert stored is not None and stored.metadata["file_path"] == str(image.resolve())
    (tmp_path / "ls.bin").write_bytes(bytes(range(256)))
    with pytest.raises(InvalidInputError) as caught:
        manager.add_memory("a program", "perceptual", 0.5, {"file_path": "ls.bin"})
    assert caught.value.field == "modality"
    with pytest.raises(InvalidInputError, match="is not UTF-8 text"):
        manager.add_memory("a program", "perceptual", 0.5, {"file_path": "ls.bin", "modality": "text"})


def test_ask_without_a_model_shows_the_passages(
    env: Settings, clean: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    kb = KnowledgeBase(clean, HashingEmbedder(), "default")
    for i in range(3):
        kb.add_text(f"# Topic {i}\n\n" + f"Aurora borealis fact number {i}. " * 40, f"doc{i}")
    assert main(["ask", "aurora borealis fact"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("no chat model is configured (LLM_MODEL_ID)")
    assert out.count("[1]") >= 1 and "[3]" in out, "three passages, not one cut at 1,200 characters"
    assert main(["ask", "aurora borealis fact", "--max-chars", "300"]) == 0
    assert "[2]" not in capsys.readouterr().out.split("sources:")[0]


def test_the_command_line_speaks_one_language(
    env: Settings, clean: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["add", "李四是前端工程师", "--type", "episodic", "--importance", "0.7"])
    capsys.readouterr()
    for command in (["search", "前端工程师"], ["summary"], ["stats"], ["forget", "--threshold", "0.1"]):
        assert main(command) == 0
        out = capsys.readouterr().out
        assert not any(word in out for word in ("记忆", "重要性", "命名空间", "遗忘")), (command, out)
    assert main(["--language", "zh", "search", "前端工程师"]) == 0
    assert "[情景记忆]" in capsys.readouterr().out
    assert main(["--language", "zh", "summary"]) == 0
    assert "记忆系统摘要" in capsys.readouterr().out


def test_ask_shows_the_score_it_ranks_by(
    env: Settings, clean: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    kb = KnowledgeBase(clean, HashingEmbedder(), "default")
    kb.add_text("glacier melt rates in the Alps", "exact")
    kb.add_text(
        "melt rates of alpine glacier ice: glacier melt, melt rates, Alps glacier melt rates, record melt",
        "terms",
    )
    kb.add_text("in the Alps, in the glacier", "close")  # more similar than "terms", fewer of the words
    kb.add_text("Sea level rise and ice sheets.", "sea")
    answer = kb.ask("glacier melt rates in the Alps", 4)
    scores = [s.score for s in answer.sources]
    assert scores == sorted(scores, reverse=True), "the sources come in the order of their score"
    hits = {h.document_id: h for h in kb.search("glacier melt rates in the Alps", 4)}
    assert all(s.similarity == hits[s.document_id].vector_score for s in answer.sources)
    assert main(["ask", "glacier melt rates in the Alps", "--limit", "4"]) == 0
    shown = [
        float(line.split("(score ")[1].split(",")[0])
        for line in capsys.readouterr().out.splitlines()
        if "(score " in line
    ]
    assert len(shown) == len(scores) and shown == sorted(shown, reverse=True)


def test_stats_and_summary_count_working_memory_of_every_session(
    env: Settings, clean: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    mcp = MemoryTool(user_id="first_hour", database=clean, session_id="mcp")
    mcp.run({"action": "add", "content": "the user is drafting a budget", "memory_type": "working"})
    mcp.run({"action": "add", "content": "the budget is due on Friday", "memory_type": "working"})
    assert main(["add", "a note from the command line"]) == 0
    capsys.readouterr()
    assert main(["stats"]) == 0
    assert "  working: 3 (forgotten 0, average importance" in capsys.readouterr().out
    assert main(["summary"]) == 0
    assert ", 1 in session cli, 2 sessions)" in capsys.readouterr().out
    assert main(["--json", "stats"]) == 0
    working = json.loads(capsys.readouterr().out)["memory"]["memories_by_type"]["working"]
    assert (working["count"], working["in_session"], working["sessions_count"]) == (3, 1, 2)
    assert "working: 3 (average importance: 0.50, 2 in this session, 2 sessions)" in mcp.run(
        {"action": "summary"}
    )


def test_a_badly_encoded_page_is_ingested_without_noise_on_stderr(
    env: Settings, clean: Database, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "page.html"
    page.write_bytes(b"<html><body><p>\xff\xfe\x00\x81 caf\xe9 \x9d\x8f, the aurora notes</p></body></html>")
    assert main(["ingest", str(page)]) == 0
    out, err = capfd.readouterr()
    assert "added" in out and "could not be decoded" not in err and "REPLACEMENT" not in err


def test_flags_and_numbers_of_the_python_api_are_checked_by_their_names(
    make_manager: Callable[..., MemoryManager], clean: Database, embedder: HashingEmbedder
) -> None:
    """A string is no boolean ("false" used to record a correction), and a search's numbers are
    refused by their own names before any statement runs."""
    memory = make_manager()
    memory_id = memory.add_memory("the ferry leaves at six", "episodic")
    before = table_digest(clean)
    for call, field in (
        (lambda: memory.update_memory(memory_id, content="at seven", correction="false"), "correction"),  # type: ignore[arg-type]
        (lambda: memory.retrieve_memories("ferry", track_access="no"), "track_access"),  # type: ignore[arg-type]
        (lambda: memory.forget_memories(confirm="yes"), "confirm"),  # type: ignore[arg-type]
        (lambda: memory.add_memories(["x"], split_long="true"), "split_long"),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidInputError) as caught:
            call()
        assert caught.value.field == field
    assert table_digest(clean) == before
    kb = KnowledgeBase(clean, embedder, "checked")
    kb.add_text("# Ferry\n\nThe ferry leaves at six.", "ferry")
    for options, field in (
        ({"candidate_pool_multiplier": -1}, "candidate_pool_multiplier"),
        ({"min_score": "a"}, "min_score"),
        ({"top_k": "3"}, "top_k"),
        ({"enable_mqe": "yes"}, "enable_mqe"),
    ):
        with pytest.raises(InvalidInputError) as caught:
            kb.search("ferry", **options)
        assert caught.value.field == field
