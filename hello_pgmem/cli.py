"""The ``hello-pgmem`` command line: a thin layer over the library.

Results go to stdout (``--json`` for machines), errors to stderr without a traceback unless
``--debug``; exit code 1 means a hello_pgmem error, 2 a usage error.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
from pydantic import ValidationError as PydanticValidationError

from hello_pgmem import devdb, migrations
from hello_pgmem.db import Database, ServerInfo, connect, probe
from hello_pgmem.demo import memory_demo
from hello_pgmem.errors import ConfigurationError, HelloPgmemError
from hello_pgmem.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])


@dataclasses.dataclass
class State:
    json: bool = False
    debug: bool = False


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment, with configuration mistakes as ConfigurationError."""
    try:
        return Settings(**overrides)
    except PydanticValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors())
        raise ConfigurationError(f"invalid settings: {problems}") from exc


def _emit(state: State, payload: dict[str, Any], text: str) -> None:
    click.echo(json.dumps(payload, ensure_ascii=False, indent=2) if state.json else text)


def _server_info(settings: Settings) -> ServerInfo:
    with connect(settings) as conn:
        return probe(conn, settings.schema_name, settings.graph_name)


def _info_text(info: ServerInfo, settings: Settings) -> str:
    head = migrations.head_revision()
    age = (
        f"{info.age_version} (graph {settings.graph_name})"
        if info.age_version
        else "not installed: everything works except the Cypher interface"
    )
    state = "head" if info.revision == head else f"behind head {head}: run hello-pgmem migrate"
    lines = [
        f"server      PostgreSQL {info.server_version}",
        f"pgvector    {info.vector_version or 'missing'} (schema {info.vector_schema or '-'})",
        f"Apache AGE  {age}",
        f"schema      {info.schema} at revision {info.revision or 'none'} ({state})",
        f"functions   {', '.join(info.functions) or '-'}",
    ]
    return "\n".join(lines)


def _info_payload(info: ServerInfo) -> dict[str, Any]:
    payload = dataclasses.asdict(info)
    payload["functions"] = list(info.functions)
    payload["head"] = migrations.head_revision()
    return payload


def _dev_settings() -> Settings:
    """Bring the development database up and return settings that point at it."""
    url = devdb.up()
    return load_settings(database_url=url) if not os.environ.get("DATABASE_URL") else load_settings()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logging.")
@click.pass_context
def cli(ctx: click.Context, as_json: bool, debug: bool) -> None:
    """hello_pgmem: memory and retrieval for LLM agents in one PostgreSQL."""
    ctx.obj = State(json=as_json, debug=debug)
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )


@cli.group()
def db() -> None:
    """The local development database (PostgreSQL 17 + pgvector + AGE)."""


@db.command("up")
@click.pass_obj
def db_up(state: State) -> None:
    """Start the development database (or check DATABASE_URL) and print its URL."""
    url = devdb.up()
    _emit(state, {"url": url}, url)


@db.command("down")
def db_down() -> None:
    """Stop the development database started by "db up"."""
    devdb.down()


@db.command("status")
@click.pass_obj
def db_status(state: State) -> None:
    """Say whether the database answers; exit code 1 when it does not."""
    ok, text = devdb.status()
    _emit(state, {"up": ok, "detail": text}, text)
    if not ok:
        sys.exit(1)


@db.command("url")
@click.pass_obj
def db_url(state: State) -> None:
    """Print the database URL in use."""
    url = os.environ.get("DATABASE_URL") or devdb.DevDB.from_env().url
    _emit(state, {"url": url}, url)


@cli.command()
@click.option("--revision", default="head", show_default=True, help="Target revision.")
@click.pass_obj
def migrate(state: State, revision: str) -> None:
    """Create or upgrade the schema (idempotent), then print what the database offers."""
    settings = load_settings()
    migrations.upgrade(settings, revision)
    info = _server_info(settings)
    _emit(state, _info_payload(info), _info_text(info, settings))


@cli.command()
@click.argument("revision")
@click.option("--yes", is_flag=True, help="Confirm; downgrading to base drops every table.")
def downgrade(revision: str, yes: bool) -> None:
    """Migrate the schema down to REVISION ("base" removes everything of hello_pgmem)."""
    if not yes:
        raise click.UsageError("downgrade drops data: add --yes to confirm")
    migrations.downgrade(load_settings(), revision)


@cli.command()
@click.pass_obj
def info(state: State) -> None:
    """Print server version, extension versions, schema revision and SQL functions."""
    settings = load_settings()
    info = _server_info(settings)
    _emit(state, _info_payload(info), _info_text(info, settings))


@cli.command()
@click.pass_obj
def demo(state: State) -> None:
    """Bring the database up, migrate it, and run the reference scenarios offline."""
    settings = _dev_settings()
    migrations.upgrade(settings)
    info = _server_info(settings)
    with Database(settings) as database:
        report = list(memory_demo(database))
    if state.json:
        _emit(state, {**_info_payload(info), "report": report}, "")
    else:
        click.echo("hello_pgmem is ready\n" + _info_text(info, settings))
        click.echo("\n".join(report))


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI, turning hello_pgmem errors into a message and exit code 1."""
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        cli.main(args=argv, prog_name="hello-pgmem", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 1
    except HelloPgmemError as exc:
        if debug:
            raise
        click.echo(f"error: {exc}", err=True)
        return 1
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
