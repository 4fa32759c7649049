"""The hello-pgmem command line: help everywhere, JSON output, clear errors and exit codes."""

from __future__ import annotations

import json
from collections.abc import Iterator

import click
import pytest

from hello_pgmem import Settings, migrations
from hello_pgmem.cli import cli, main


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
    assert "search_episodic" in payload["functions"]


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


def test_demo_runs_offline(env: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "hello_pgmem is ready" in out
    search = out.split("--- 搜索 '前端工程师' ---\n", 1)[1].splitlines()
    assert search[0] == "🔍 找到 3 条相关记忆:"
    assert search[1].startswith("1. [情景记忆] 李四是前端工程师")
    assert "🔄 已整合 1 条记忆为长期记忆（working → episodic，阈值=0.75）" in out
    assert main(["demo"]) == 0, "the demo can run again on the same database"
