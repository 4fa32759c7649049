"""The hello-pgmem command line: help everywhere, JSON output, clear errors and exit codes."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from hello_pgmem import Database, Settings
from hello_pgmem.cli import cli, main
from hello_pgmem.core.i18n import has_cjk
from hello_pgmem.db import migrations
from tests.conftest import table_digest


def commands(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in group.commands.items():
        yield (*prefix, name)
        if isinstance(command, click.Group):
            yield from commands(command, (*prefix, name))


@pytest.fixture()
def env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    return settings


@pytest.mark.parametrize("path", list(commands(cli)))
def test_every_command_has_help(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*path, "--help"]) == 0
    out = capsys.readouterr().out
    assert "Usage: hello-pgmem" in out
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    assert command.help, f"{' '.join(path)} has no help text"


def test_info_json(env: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--json", "info"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["revision"] == payload["head"] == migrations.head_revision()
    assert payload["vector_version"].startswith("0.8")
    assert payload["age_version"]
    assert "search_by_recency" in payload["functions"]


def test_migrate_prints_the_confirmation(env: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate"]) == 0
    out = capsys.readouterr().out
    assert "server      PostgreSQL 17" in out
    assert f"schema      pgmem at revision {migrations.head_revision()} (head)" in out
    assert "importance_weight" in out


def test_downgrade_needs_confirmation(env: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["downgrade", "base"]) == 2
    assert "add --yes" in capsys.readouterr().err
    assert main(["--json", "info"]) == 0
    assert json.loads(capsys.readouterr().out)["revision"] == migrations.head_revision()


def test_bad_setting_is_an_error_without_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PGMEM_SCHEMA", "pgmem; DROP TABLE x")
    assert main(["info"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: invalid settings:")
    assert "PGMEM_SCHEMA must match" in err
    assert "Traceback" not in err


def test_unreachable_database_exit_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://postgres@127.0.0.1:1/pgmem")
    monkeypatch.setenv("PGMEM_CONNECT_TIMEOUT", "1")
    assert main(["info"]) == 1
    assert "cannot connect to the database" in capsys.readouterr().err
    assert main(["db", "status"]) == 1


def test_demo_runs_from_an_empty_database(
    new_database: Callable[[], str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", new_database())  # not even migrated: the demo does it
    monkeypatch.delenv("LLM_MODEL_ID", raising=False)
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "hello_pgmem is ready" in out and not has_cjk(out), "English by default"
    search = out.split("--- Search 'frontend engineer' ---\n", 1)[1].splitlines()
    assert search[0] == "🔍 Found 3 related memories:"
    assert search[1].startswith("1. [episodic] Bob is a frontend engineer")
    assert "Bob —is_a→ frontend engineer" in out and "Bob —knows→ React" in out
    assert "LLM_MODEL_ID is not set: the agent conversation is skipped" in out
    shown = re.findall(
        r"relevance ([\d.]+) = \(vector ([\d.]+) × 0.7 \+ graph ([\d.]+) × 0.3\) × importance weight ([\d.]+)",
        out,
    )
    assert len(shown) == 3
    for relevance, vector, graph, weight in shown:  # the arithmetic printed is the arithmetic done
        assert float(relevance) == pytest.approx(
            (float(vector) * 0.7 + float(graph) * 0.3) * float(weight), abs=0.006
        )
    assert main(["--language", "zh", "demo"]) == 0, "the demo can run again on the same database"
    out = capsys.readouterr().out
    search = out.split("--- 搜索 '前端工程师' ---\n", 1)[1].splitlines()
    assert search[0] == "🔍 找到 3 条相关记忆:"
    assert search[1].startswith("1. [情景记忆] 李四是前端工程师")
    assert "🔄 已整合 1 条记忆为长期记忆（working → episodic，阈值=0.75）" in out
    assert "李四 —职业→ 前端工程师" in out
    rag = out.split("--- 搜索 'Python编程语言的历史' ---\n", 1)[1].splitlines()
    assert rag[2].startswith("1. 文档: **python_intro**")
    assert "📊 文档分块数: 3" in out
    assert "未配置 LLM_MODEL_ID：跳过智能体对话" in out


def run_json(args: list[str], capsys: pytest.CaptureFixture[str], code: int = 0) -> Any:
    assert main(["--json", *args]) == code, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.fixture()
def cli_env(env: Settings, clean: Database, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("PGMEM_USER", "cli_user")
    monkeypatch.setenv("PGMEM_NAMESPACE", "cli_docs")
    return env


def test_memory_commands(cli_env: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    added = run_json(
        ["add", "李四是前端工程师，擅长React", "--type", "semantic", "--importance", "0.7"], capsys
    )
    run_json(["add", "王五是产品经理", "--type", "episodic", "--importance", "0.4"], capsys)
    found = run_json(["search", "前端工程师", "--limit", "2"], capsys)
    assert found[0]["id"] == added["id"] and found[0]["components"]["graph_score"] == 1.0
    assert found[0]["session_id"] == "cli" and "session_id" not in found[0]["metadata"]
    shown = run_json(["search", "前端工程师", "--limit", "2", "--show-sql"], capsys)
    assert "FROM search_memories(" in shown["sql"] and "'cli_user'" in shown["sql"]
    summary = run_json(["summary"], capsys)
    assert summary["stats"]["total_memories"] == 2
    graph = run_json(["graph", "李四"], capsys)
    assert {e["name"] for e in graph["neighbourhood"]["entities"]} == {"李四", "前端工程师", "React"}
    path = run_json(["graph", "李四", "--to", "React"], capsys)
    assert path == [{"source": "李四", "relation_type": "擅长", "target": "React"}]
    assert run_json(["forget", "--threshold", "0.5"], capsys) == {
        "forgotten": 1,
        "strategy": "importance_based",
    }
    run_json(["add", "今天要交报告", "--importance", "0.9"], capsys)
    # working memory belongs to the CLI's session (PGMEM_SESSION, default "cli"), kept across commands
    assert run_json(["--session", "other", "consolidate"], capsys)["consolidated"] == 0
    assert run_json(["consolidate"], capsys)["consolidated"] == 1
    stats = run_json(["stats"], capsys)
    assert stats["memory"]["total_memories"] == 2 and stats["knowledge"]["namespace"] == "cli_docs"
    assert main(["--user", "someone_else", "search", "前端工程师"]) == 0
    assert "no memory matches" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add", "   "], "content: must not be empty"),
        (["add", "x", "--importance", "3"], "importance: must be a number between 0 and 1"),
        (
            ["consolidate", "--from", "semantic", "--to", "working"],
            "cannot consolidate semantic into working",
        ),
        (["graph", "nobody"], "no such entity: nobody"),
        (["ask", ""], "question: must not be empty"),
        (["add", "ok", "--file", "/no/such.png"], "file: only a perceptual memory takes one"),
        (["add", "ok", "--type", "episodic", "--modality", "image"], "modality: only a perceptual memory"),
        (["add", "x", "--type", "perceptual", "--file", "/no/such.png"], "file_path: no such file"),
    ],
)
def test_memory_commands_bad_input(
    cli_env: Settings, clean: Database, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    main(["add", "已有的记忆", "--type", "episodic"])
    capsys.readouterr()
    before = table_digest(clean)
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err
    assert table_digest(clean) == before


def test_usage_errors_exit_2(cli_env: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["add", "x", "--type", "dream"]) == 2
    assert "Invalid value for '--type'" in capsys.readouterr().err
    assert main(["ingest"]) == 2
    assert main(["ingest", "README.md", "--chunk-size", "1000000000"]) == 2
    assert "--chunk-size" in capsys.readouterr().err
    for args in (["search", "x", "--limit", "0"], ["summary", "--limit", "0"]):
        assert main(args) == 2, args  # a usage error, refused before any connection
        assert "1<=x<=200" in capsys.readouterr().err
    assert main(["search", "x", "--min-importance", "2"]) == 2
    assert "0<=x<=1" in capsys.readouterr().err


@pytest.mark.parametrize("args", [["search"], ["nosuchcommand"], ["add", "x", "--type", "dream"]])
def test_usage_errors_say_error_as_every_error_does(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Usage: hello-pgmem" in err and "--help' for help" in err
    assert "\nerror: " in err and "Error:" not in err


def test_ingest_and_ask(cli_env: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "python.md").write_text(
        "# Python\n\nPython由Guido van Rossum于1991年首次发布。", encoding="utf-8"
    )
    (tmp_path / "ml.md").write_text("# 机器学习\n\n机器学习包括监督学习和强化学习。", encoding="utf-8")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    assert main(["ingest", str(tmp_path)]) == 3, "one file failed, the others were ingested"
    table = capsys.readouterr().out
    assert "broken.pdf" in table and "failed" in table and table.count("added") == 2
    results = run_json(["ingest", str(tmp_path / "python.md")], capsys)
    assert results[0]["status"] == "unchanged"
    answer = run_json(["ask", "Python是哪一年发布的？", "--limit", "1"], capsys)
    assert answer["answer"] is None and answer["sources"][0]["document_id"].endswith("python.md")
    assert main(["ingest", str(tmp_path / "missing.md")]) == 3


def test_reembed_command(
    cli_env: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_json(["add", "一条情景记忆", "--type", "episodic"], capsys)
    monkeypatch.setenv("EMBED_MODEL_TYPE", "hashing")
    monkeypatch.setenv("EMBED_HASH_DIMENSION", "128")
    assert run_json(["reembed"], capsys) == {"reembedded": 1, "model": "hashing-v1-128"}
    assert run_json(["reembed"], capsys)["reembedded"] == 0


def test_chat_needs_a_model(
    cli_env: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LLM_MODEL_ID", raising=False)
    assert main(["chat"]) == 1
    assert "LLM_MODEL_ID is not set" in capsys.readouterr().err


def test_chat_with_a_model(
    cli_env: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fake_openai import FakeOpenAI, serve

    def model(body: dict[str, Any]) -> str:
        if "memories" in body["messages"][-1]["content"]:  # the memory loop's extraction prompt
            return json.dumps({"memories": []})
        return f"你说的是：{body['messages'][-1]['content']}"

    with serve(FakeOpenAI(chat=model)) as fake:
        monkeypatch.setenv("LLM_MODEL_ID", "fake")
        monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
        monkeypatch.setattr("sys.stdin", io.StringIO("你好\n再见\n\n"))
        assert main(["chat"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["agent> 你说的是：你好", "agent> 你说的是：再见"]


def test_token_create_list_and_revoke(env: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    from hello_pgmem.access import resolve_token

    assert main(["--json", "token", "create", "--user", "tina", "--namespace", "handbook"]) == 0
    made = json.loads(capsys.readouterr().out)
    assert made["user"] == "tina" and made["namespaces"] == ["handbook"] and made["token"].startswith("pgm_")
    with Database(env) as db:
        identity = resolve_token(db, made["token"])
        assert identity is not None and (identity.user_id, identity.namespaces) == ("tina", ("handbook",))
    assert main(["--json", "token", "list", "--user", "tina"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [t["id"] for t in listed] == [made["id"]] and "token" not in listed[0]
    assert main(["token", "revoke", "--user", "someone_else", made["id"][:8]]) == 1
    assert main(["token", "revoke", "--user", "tina", made["id"][:8]]) == 0
    with Database(env) as db:
        assert resolve_token(db, made["token"]) is None


def test_export_to_a_file_says_where(
    cli_env: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["add", "导出的记忆", "--type", "episodic"]) == 0
    capsys.readouterr()
    target = tmp_path / "out.jsonl"
    assert main(["export", "--output", str(target)]) == 0
    lines = target.read_text(encoding="utf-8").splitlines()
    assert lines and f"exported {len(lines)} lines of user cli_user to {target}" in capsys.readouterr().err


def test_update_remove_and_history_of_one_memory_and_the_graph_as_of_a_time(
    cli_env: Settings, clean: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    """An update closes a fact, from a shell: the history shows both versions, and the graph as
    of before the update answers the same in English and Chinese."""
    added = run_json(["add", "张三在北京工作", "--type", "semantic", "--importance", "0.8"], capsys)
    with clean.connection() as conn:
        row = conn.execute("SELECT clock_timestamp()").fetchone()
    assert row is not None
    before = row[0].isoformat()
    assert run_json(["update", added["id"][:8], "--content", "张三在上海工作"], capsys)["updated"] is True
    versions = run_json(["history", added["id"]], capsys)
    assert (versions[-1]["content"], versions[-1]["current"]) == ("张三在上海工作", True)
    assert {v["content"] for v in versions[:-1]} == {"张三在北京工作"}
    assert not any(v["current"] for v in versions[:-1])
    then = run_json(["graph", "张三", "--valid-at", before], capsys)
    assert {(r["source"], r["target"]) for r in then["neighbourhood"]["relations"]} == {("张三", "北京")}
    assert [m["content"] for m in then["memories"]] == ["张三在北京工作"]
    assert main(["--language", "zh", "graph", "张三", "--valid-at", before]) == 0
    shown = capsys.readouterr().out
    assert "北京" in shown and "上海" not in shown
    assert main(["graph", "张三", "--known-at", "2001-01-01T00:00:00+00:00"]) == 0
    assert "Nothing was known about '张三' then: no relation, no memory." in capsys.readouterr().out
    assert main(["graph", "张三"]) == 0
    now = capsys.readouterr().out
    assert "上海" in now and "北京" not in now
    assert run_json(["remove", added["id"]], capsys)["removed"] is True
    for again in (
        ["remove", added["id"]],
        ["update", added["id"], "--content", "x"],
        ["history", added["id"]],
    ):
        assert main(again) == 1  # not found is an error, as everywhere
        printed = capsys.readouterr()
        assert printed.out == "" and printed.err == f"error: no such memory: {added['id']}\n"


def test_the_history_of_a_working_memory_says_it_keeps_none(
    cli_env: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    note = run_json(["add", "call the plumber"], capsys)["id"]  # working memory, by default
    assert main(["history", note]) == 0
    assert capsys.readouterr().out == f"a working memory keeps no versions: {note}\n"


def test_stats_in_chinese_names_the_types_in_chinese(
    cli_env: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["add", "我喜欢猫", "--type", "semantic"]) == 0
    capsys.readouterr()
    assert main(["--language", "zh", "stats"]) == 0
    out = capsys.readouterr().out
    assert "  语义记忆: 1（" in out and "  工作记忆: 0（" in out
    assert not re.search(r"^\s+(working|episodic|semantic|perceptual):", out, re.M)


@pytest.mark.parametrize(
    "when", ["9999-12-31T23:59:59+00:00", "9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00"]
)
def test_a_time_no_client_could_read_back_is_refused(
    cli_env: Settings, clean: Database, when: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = table_digest(clean)
    assert main(["add", "an event", "--type", "episodic", "--when", when]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: timestamp: must lie between 0001-01-02 and 9999-12-30 (UTC)")
    assert table_digest(clean) == before
    assert main(["add", "an event", "--type", "episodic", "--when", "1066-10-14T09:00:00+00:00"]) == 0
    capsys.readouterr()
    assert main(["search", "event"]) == 0 and "an event" in capsys.readouterr().out


def test_the_command_line_starts_without_the_library() -> None:
    """``--help`` answers fast because the commands import the library when they run (0.3 s floor,
    bench/cli_speed.py): loading the command line loads no memory, tool, model or numpy module."""
    code = (
        "import sys, hello_pgmem.cli; "
        "print(' '.join(m for m in sys.modules if m.startswith(('hello_pgmem.memory', 'hello_pgmem.tools', "
        "'hello_pgmem.embedding', 'numpy', 'openai', 'sklearn', 'spacy'))))"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == ""
