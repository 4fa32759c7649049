"""The development database command, run exactly as the README and CI run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from hello_pgmem import ConfigurationError, dev
from hello_pgmem.dev import chroot
from hello_pgmem.dev.citus_url import ExternalCitus

REPO = Path(__file__).resolve().parent.parent


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    environment.update(PYTHON=sys.executable, **env)
    return subprocess.run(
        [str(REPO / "scripts" / "devdb"), *args],
        text=True,
        capture_output=True,
        env=environment,
        check=False,
    )


def test_up_is_idempotent_and_prints_the_url() -> None:
    first = run("up")
    second = run("up")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert first.stdout == second.stdout == dev.DevDB.from_env().url + "\n"
    with psycopg.connect(first.stdout.strip()) as conn:
        row = conn.execute("SELECT current_setting('server_version_num')::int / 10000").fetchone()
        assert row == (17,)
        names = {r[0] for r in conn.execute("SELECT name FROM pg_available_extensions").fetchall()}
        assert {"vector", "age"} <= names


def test_status_and_url() -> None:
    status = run("status")
    assert status.returncode == 0 and status.stdout.startswith("up: PostgreSQL 17")
    assert run("url").stdout.strip() == dev.DevDB.from_env().url


def test_database_url_is_only_checked() -> None:
    done = run("up", DATABASE_URL="postgresql://postgres@127.0.0.1:1/nowhere", PGMEM_CONNECT_TIMEOUT="1")
    assert done.returncode == 1
    assert "cannot connect to DATABASE_URL" in done.stderr


def test_unknown_command() -> None:
    done = run("explode")
    assert done.returncode == 2 and "usage: devdb up|down|status|url|psql" in done.stderr


def test_server_config_does_not_preload_age() -> None:
    config = chroot.server_config(dev.DevDB.from_env())
    assert "shared_preload_libraries" not in config
    assert "listen_addresses = '127.0.0.1'" in config


def test_citus_up_without_an_installed_citus_says_how_to_get_one(tmp_path: Path) -> None:
    """A fresh home has no Citus: one line that says so and how to get one, exit 1; down under
    that home stops no other home's servers and says so."""
    home = {"PGMEM_HOME": str(tmp_path / "home"), "PGMEM_PORT": "59432"}
    up = run("citus", "up", **home)
    assert up.returncode == 1
    lines = up.stderr.strip().splitlines()
    assert len(lines) == 1 and "Citus is not installed in the development root" in lines[0], up.stderr
    assert "Citus Data's packages" in lines[0] and "docker compose --profile citus up" in lines[0]
    assert run("citus", "installed", **home).returncode == 1
    down = run("citus", "down", **home)
    assert down.returncode == 0 and "no Citus node runs under" in down.stdout


def test_status_under_a_fresh_home_does_not_call_another_homes_server_up(tmp_path: Path) -> None:
    """The development server of the default home answers on the port; a fresh home has none."""
    assert run("status").returncode == 0
    fresh = run("status", PGMEM_HOME=str(tmp_path / "fresh"))
    assert fresh.returncode == 1, fresh.stdout
    assert f"no development database runs under {tmp_path / 'fresh'}" in fresh.stdout + fresh.stderr
    assert "answered by another server" in fresh.stdout + fresh.stderr


def test_a_citus_url_without_citus_is_refused_with_the_variable_named(server_url: str) -> None:
    """PGMEM_CITUS_URL must name a coordinator: the development server (no citus extension) is
    refused before any database is made."""
    with psycopg.connect(server_url, autocommit=True) as conn:
        before = conn.execute("SELECT count(*) FROM pg_database").fetchone()
    with pytest.raises(
        ConfigurationError, match="PGMEM_CITUS_URL names a database without the citus extension"
    ):
        ExternalCitus(server_url).create_database("citus_url_probe")
    with pytest.raises(ConfigurationError, match="PGMEM_CITUS_URL: cannot connect"):
        ExternalCitus("postgresql://postgres@127.0.0.1:1/pgmem").create_database("citus_url_probe")
    with psycopg.connect(server_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_database").fetchone() == before


def test_pgmem_port_and_db_move_every_command_not_only_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without DATABASE_URL, the library, connect() and the CLI go where PGMEM_PORT and PGMEM_DB
    put the development server, as ``db url`` says."""
    from hello_pgmem import Settings

    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("PGMEM_PORT", "55611")
    monkeypatch.setenv("PGMEM_DB", "pgmem_elsewhere")
    expected = "postgresql://postgres@127.0.0.1:55611/pgmem_elsewhere"
    assert Settings().database_url == expected == chroot.DevDB.from_env().url
    shown = run("url", PGMEM_PORT="55611", PGMEM_DB="pgmem_elsewhere")
    assert shown.stdout.strip() == expected
    doctor = subprocess.run(
        [str(Path(sys.executable).parent / "hello-pgmem"), "doctor"],
        text=True,
        capture_output=True,
        env={k: v for k, v in os.environ.items() if k != "DATABASE_URL"},
        check=False,
        timeout=60,
    )
    assert "55611" in doctor.stdout + doctor.stderr
    monkeypatch.setenv("PGMEM_DB", "bad name")
    with pytest.raises(ValueError, match="PGMEM_DB must match"):
        Settings()
