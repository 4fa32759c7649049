"""Every input named by its field, nothing accepted in silence, and one way to say "not found" on
every command, tool and MCP call (its ``isError`` set), the Python API returning instead."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from hello_pgmem import Database, HashingEmbedder, InvalidInputError, Settings, Store
from hello_pgmem.cli import main
from hello_pgmem.memory import MemoryManager
from hello_pgmem.tools import MemoryTool
from hello_pgmem.tools.base import succeeded
from tests.conftest import table_digest
from tests.fake_openai import FakeOpenAI, serve
from tests.patience import patience

UNKNOWN = "00000000-0000-4000-8000-000000000000"
HELLO_PGMEM = str(Path(sys.executable).with_name("hello-pgmem"))


@pytest.fixture()
def cli_env(clean: Database, monkeypatch: pytest.MonkeyPatch) -> Database:
    monkeypatch.setenv("DATABASE_URL", clean.settings.database_url)
    monkeypatch.setenv("PGMEM_USER", "said_once")
    return clean


def cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["update", UNKNOWN, "--content", "x"], f"error: no such memory: {UNKNOWN}"),
        (["update", "0000abcd", "--content", "x"], "error: no such memory: 0000abcd"),
        (["remove", "0000abcd"], "error: no such memory: 0000abcd"),
        (["history", "0000abcd"], "error: no such memory: 0000abcd"),
        (["restore", "--id", "0000abcd"], "error: no such forgotten memory: 0000abcd"),
        (["graph", "Nobody"], "error: no such entity: Nobody"),
        (["--language", "zh", "remove", "0000abcd"], "error: 未找到记忆: 0000abcd"),
    ],
)
def test_every_command_says_not_found_in_the_same_words(
    cli_env: Database, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    code, _, err = cli(args, capsys)
    assert (code, err.strip()) == (1, said)


def test_restore_takes_a_prefix_of_eight_characters(
    cli_env: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(["add", "Ada keeps bees", "--type", "episodic", "--importance", "0.05"], capsys)
    memory_id = out.strip()
    assert cli(["forget", "--threshold", "0.1"], capsys)[0] == 0
    code, out, _ = cli(["restore", "--id", memory_id[:8]], capsys)
    assert (code, out.strip()) == (0, "restored 1 memories")


def test_every_tool_says_not_found_as_an_error(clean: Database, embedder: HashingEmbedder) -> None:
    with Store(database=clean, embedder=embedder) as store:
        memory, rag = store.memory_tool("said_once"), store.rag_tool("said-once")
        for answer, words in (
            (memory.run("update", memory_id=UNKNOWN, content="x"), f"❌ no such memory: {UNKNOWN}"),
            (memory.run("remove", memory_id="0000abcd"), "❌ no such memory: 0000abcd"),
            (memory.run("history", memory_id="0000abcd"), "❌ no such memory: 0000abcd"),
            (memory.run("restore", memory_ids=["0000abcd"]), "❌ no such forgotten memory: 0000abcd"),
            (memory.run("graph", entity="Nobody"), "❌ no such entity: Nobody"),
            (memory.run("graph", memory_id="0000abcd"), "❌ no such memory: 0000abcd"),
            (rag.run("remove_document", document_id="nope"), "❌ no such document: nope"),
        ):
            assert (answer, succeeded(answer)) == (words, False)


def test_the_python_api_returns_what_is_not_there(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager("said_once")
    assert manager.update_memory(UNKNOWN, content="x") is False
    assert manager.remove_memory(UNKNOWN) is False
    assert manager.get_memory(UNKNOWN) is None
    assert manager.resolve_id("0000abcd") is None
    assert manager.restore_memories([UNKNOWN]) == 0
    assert manager.memory_history(UNKNOWN) == []
    assert manager.graph_neighbourhood("Nobody") is None
    assert manager.graph_path("Nobody", "Somebody") == []


def test_bad_inputs_are_named_by_their_field(clean: Database, embedder: HashingEmbedder) -> None:
    with Store(database=clean, embedder=embedder) as store:
        memory, kb = store.memory("said_once"), store.knowledge("said-once")
        start, end = datetime(2021, 1, 1, tzinfo=UTC), datetime(2020, 1, 1, tzinfo=UTC)
        before = table_digest(clean)
        calls: list[tuple[Callable[[], Any], str]] = [
            (lambda: memory.retrieve_memories("x", time_range="2020"), "time_range: must be a pair"),  # type: ignore[arg-type]
            (
                lambda: memory.retrieve_memories("x", time_range=(start, end)),
                "time_range: its start must not",
            ),
            (lambda: store.memory("said_once", types=["bogus"]), "types: must be one of"),
            (lambda: store.memory("said_once", types=[]), "types: must be a list of memory types"),
            (lambda: store.knowledge("said-once").add_text("Hello", ""), "document_id: must not be empty"),
            (
                lambda: memory.update_memory(UNKNOWN, valid_from="99999-01-01"),
                "valid_from: must be an ISO 8601",
            ),
            (lambda: kb.search("bees", candidate_pool_multiplier=-1), "candidate_pool_multiplier: must be"),
            (lambda: kb.search("bees", min_score="a"), "min_score: must be a number"),  # type: ignore[arg-type]
        ]
        for call, words in calls:
            with pytest.raises(InvalidInputError, match=words):
                call()
        assert table_digest(clean) == before, "a refused call changes nothing"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["add", "x", "--type", "perceptual", "--file", "/nonexistent"], "error: file_path: no such file"),
        (["update", UNKNOWN, "--valid-from", "99999-01-01"], "error: valid_from: must be an ISO 8601"),
        (["mcp", "--http", "--port", "-1"], "Invalid value for '--port'"),
    ],
)
def test_the_command_line_names_the_option_at_fault(
    cli_env: Database, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    code, _, err = cli(args, capsys)
    assert code != 0 and said in err, err


def test_what_was_once_accepted_in_silence_is_said(
    cli_env: Database,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    make_tool: Callable[..., MemoryTool],
) -> None:
    code, _, err = cli(["ingest", str(tmp_path)], capsys)
    assert (code, err.strip()) == (1, f"error: PATH: holds no file to ingest: {tmp_path}")
    code, out, _ = cli(["--namespace", "never-made", "ask", "what is in it?"], capsys)
    assert code == 0 and "the namespace holds no documents" in out
    answer = make_tool().run("add", content="Ada keeps bees", memory_type="episodic", bogus=1)
    assert succeeded(answer) and answer.endswith("; kept in its metadata: bogus")


def test_ask_in_an_empty_namespace_says_so(
    settings: Settings, clean: Database, embedder: HashingEmbedder
) -> None:
    with Store(database=clean, embedder=embedder) as store:
        answer = store.knowledge("never-made").ask("what is in it?")
        assert (answer.status, answer.notice) == (
            "no_documents",
            "the namespace 'never-made' holds no documents",
        )
        store.knowledge("made").add_text("# Bees\n\nAda keeps bees.", "bees")
        assert store.knowledge("made").ask("quantum chromodynamics").status != "no_documents"


def test_a_degraded_search_says_its_notice_once(clean: Database) -> None:
    """The embedding endpoint answers 500: the command line's search ranks by words and says so
    in one ``note:`` line, not also in a log line."""
    with serve(FakeOpenAI(dimension=8, fail_status=500)) as down:
        env = {
            **os.environ,
            "DATABASE_URL": clean.settings.database_url,
            "PGMEM_USER": "said_once",
            "PGMEM_EMBED": "queue",
            "PGMEM_EMBEDDING_QUEUE_WORKERS": "0",
            "EMBED_MODEL_TYPE": "openai",
            "EMBED_MODEL_NAME": "fake-embed-said-once",
            "EMBED_BASE_URL": down.base_url,
            "EMBED_DIMENSION": "8",
        }
        run = partial(subprocess.run, env=env, capture_output=True, text=True, timeout=patience(120))
        assert run([HELLO_PGMEM, "add", "Ada keeps bees", "--type", "episodic"]).returncode == 0
        searched = run([HELLO_PGMEM, "search", "bees"])
    assert searched.returncode == 0 and "Ada keeps bees" in searched.stdout
    said = [line for line in searched.stderr.splitlines() if "scripted failure" in line]
    assert len(said) == 2 and all(line.startswith("note: ") for line in said), searched.stderr
    assert "the query could not be embedded" in said[0] and "newest memories" in said[1]
