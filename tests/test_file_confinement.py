"""What the file-reading paths may read: an ingest never walks the whole machine and stops at its
budget; the agent-facing tools (in process and over stdio MCP) read only beneath their files
root, by default the working directory."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from hello_pgmem import Database, Settings
from hello_pgmem.cli import main
from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.embedding import HashingEmbedder
from hello_pgmem.rag.knowledge import KnowledgeBase
from hello_pgmem.tools.base import succeeded
from hello_pgmem.tools.memory_tool import MemoryTool
from hello_pgmem.tools.rag_tool import RAGTool
from tests.conftest import table_digest

HELLO_PGMEM = str(Path(sys.executable).with_name("hello-pgmem"))
SECRET = "/etc/shadow" if os.access("/etc/shadow", os.R_OK) else "/etc/passwd"


def stored_documents(db: Database) -> int:
    with db.connection() as conn:
        row = conn.execute("SELECT count(*) FROM documents").fetchone()
    return int(row[0]) if row else 0


@pytest.fixture()
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding one document, with a secret file beside it (outside)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "guide.md").write_text("# Guide\n\nThe deploy key rotates monthly.", encoding="utf-8")
    (tmp_path / "secret.md").write_text("# Secret\n\nThe vault code is 4242.", encoding="utf-8")
    monkeypatch.chdir(work)
    return work


@pytest.mark.parametrize(
    "paths", ["/", ["/"], Path("/"), "/etc", ["docs", "/usr"], "/proc/self", "~", "/root/../"]
)
def test_an_ingest_of_the_whole_machine_is_refused_and_writes_nothing(
    paths: object, clean: Database, embedder: HashingEmbedder
) -> None:
    kb = KnowledgeBase(clean, embedder, "machine")
    with pytest.raises(InvalidInputError) as caught:
        kb.ingest(paths)  # type: ignore[arg-type]
    assert caught.value.field == "paths"
    assert any(
        words in caught.value.rule
        for words in ("filesystem root", "system folder", "home folder", "running system's state")
    ), caught.value.rule
    assert stored_documents(clean) == 0


def test_ingest_of_the_root_on_the_command_line_is_refused(
    settings: Settings, clean: Database, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    assert main(["--namespace", "machine", "ingest", "/"]) == 1
    assert "paths: '/' is the filesystem root" in capsys.readouterr().err
    assert stored_documents(clean) == 0


def test_a_folder_ingest_over_its_budget_is_refused_before_any_write(
    tmp_path: Path,
    clean: Database,
    embedder: HashingEmbedder,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for number in range(3):
        (tmp_path / f"page{number}.md").write_text(f"# Page {number}\n\n" + "words " * 50, encoding="utf-8")
    kb = KnowledgeBase(clean, embedder, "budget")
    with pytest.raises(InvalidInputError, match=r"more than 2 files.*max_files \(--max-files\)"):
        kb.ingest(tmp_path, max_files=2)
    with pytest.raises(InvalidInputError, match=r"more than 400 bytes.*max_bytes \(--max-bytes\)"):
        kb.ingest(tmp_path, max_bytes=400)
    with pytest.raises(InvalidInputError, match="max_files: must be a positive integer"):
        kb.ingest(tmp_path, max_files=0)
    assert stored_documents(clean) == 0
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    assert main(["--namespace", "budget", "ingest", str(tmp_path), "--max-files", "2"]) == 1
    assert "--max-files" in capsys.readouterr().err
    assert stored_documents(clean) == 0
    assert [r.status for r in kb.ingest(tmp_path, max_files=3)] == ["added"] * 3


def test_the_rag_tool_reads_only_beneath_the_working_directory_by_default(
    workdir: Path, clean: Database, embedder: HashingEmbedder
) -> None:
    (workdir / "out.md").symlink_to(workdir.parent / "secret.md")
    tool = RAGTool(database=clean, embedder=embedder)
    for outside in (SECRET, "../secret.md", str(workdir.parent / "secret.md"), "out.md", "~/.bashrc"):
        answer = tool.run("add_document", file_path=outside)
        assert not succeeded(answer) and "file_path:" in answer, (outside, answer)
    assert stored_documents(clean) == 0
    assert succeeded(tool.run("add_document", file_path="guide.md"))
    assert "deploy key" in tool.run("search", query="deploy key")
    assert "vault" not in tool.run("search", query="vault code")


def test_a_file_name_too_long_for_the_system_is_refused_by_name(
    workdir: Path, clean: Database, embedder: HashingEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    """A name of 5,000 characters is refused naming file_path and its bound; one with a part longer
    than a file name may be is no such file. Nothing stored, nothing logged as an internal error."""
    tool = RAGTool(database=clean, embedder=embedder)
    answer = tool.run("add_document", file_path="a" * 5_000)
    assert not succeeded(answer) and "file_path: must be at most 4,096 characters" in answer
    for name in ("a" * 300, "docs/" + "b" * 300 + "/guide.md"):
        answer = tool.run("add_document", file_path=name)
        assert not succeeded(answer) and "No such file" in answer, (name[:20], answer[:80])
    assert stored_documents(clean) == 0
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_tool_started_in_a_system_folder_reads_no_file_unless_given_a_root(
    clean: Database, embedder: HashingEmbedder, monkeypatch: pytest.MonkeyPatch, workdir: Path
) -> None:
    from hello_pgmem.tools.files import files_root

    monkeypatch.chdir("/")
    assert files_root(None) is None
    answer = RAGTool(database=clean, embedder=embedder).run("add_document", file_path=SECRET)
    assert not succeeded(answer) and "reading files is off" in answer
    widened = RAGTool(database=clean, embedder=embedder, files_root=workdir)
    assert succeeded(widened.run("add_document", file_path=str(workdir / "guide.md")))
    assert stored_documents(clean) == 1


def test_a_perceptual_memorys_file_is_read_only_beneath_the_root(
    workdir: Path, make_tool: Callable[..., MemoryTool], clean: Database
) -> None:
    tool = make_tool(memory_types=["working", "episodic", "semantic", "perceptual"])
    before = table_digest(clean)
    outside = tool.run("add", content="a note", memory_type="perceptual", file_path=SECRET, modality="text")
    assert not succeeded(outside) and "file_path:" in outside and "not inside" in outside
    elsewhere = tool.run("add", content="a note", memory_type="episodic", file_path="guide.md")
    assert not succeeded(elsewhere) and "file_path: only a perceptual memory reads a file" in elsewhere
    assert table_digest(clean) == before
    inside = tool.run("add", content="the guide", memory_type="perceptual", file_path="guide.md")
    assert succeeded(inside), inside


def test_stdio_mcp_reads_only_beneath_its_working_directory(
    workdir: Path, settings: Settings, clean: Database
) -> None:
    env = {**os.environ, "DATABASE_URL": settings.database_url}
    params = StdioServerParameters(
        command=HELLO_PGMEM, args=["--user", "erin", "--namespace", "erin_docs", "mcp"], env=env, cwd=workdir
    )

    async def scenario() -> None:
        async with Client(params, cache=None) as client:
            secret = await client.call_tool("rag_add_document", {"file_path": SECRET})
            assert secret.is_error and "not inside" in secret.content[0].text  # type: ignore[union-attr]
            walked = await client.call_tool("rag_ingest", {"paths": ["/"]})
            assert walked.is_error
            beside = await client.call_tool("rag_ingest", {"paths": [str(workdir.parent)]})
            assert beside.is_error
            assert stored_documents(clean) == 0
            guide = await client.call_tool("rag_add_document", {"file_path": "guide.md"})
            assert not guide.is_error
            assert stored_documents(clean) == 1

    anyio.run(scenario)
