"""The ``hello-pgmem`` command line: a thin layer over the library.

Results go to stdout (``--json`` for machines), errors to stderr without a traceback unless
``--debug``. Exit codes: 0 success, 1 a hello_pgmem error (bad input, database, model), 2 a usage
error, 3 some files of an ingest failed (the others were ingested).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from hello_pgmem.db import Database
from hello_pgmem.errors import ConfigurationError, HelloPgmemError
from hello_pgmem.settings import Settings


@dataclasses.dataclass
class State:
    json: bool = False
    debug: bool = False
    user: str = "default_user"
    namespace: str = "default"
    session: str = "cli"


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment, with configuration mistakes as ConfigurationError."""
    try:
        return Settings(**overrides)
    except PydanticValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors())
        raise ConfigurationError(f"invalid settings: {problems}") from exc


def jsonable(value: Any) -> Any:
    """Pydantic models, lists and dicts of them, as plain JSON values."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


def emit(state: State, payload: Any, text: str) -> None:
    """``payload`` as JSON with --json, else ``text``."""
    click.echo(json.dumps(jsonable(payload), ensure_ascii=False, indent=2) if state.json else text)


@contextmanager
def database() -> Iterator[Database]:
    with Database(load_settings()) as db:
        yield db


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logging.")
@click.option(
    "--user",
    default="default_user",
    envvar="PGMEM_USER",
    show_default=True,
    help="Whose memories (env PGMEM_USER).",
)
@click.option(
    "--namespace",
    default="default",
    envvar="PGMEM_NAMESPACE",
    show_default=True,
    help="Which knowledge-base namespace (env PGMEM_NAMESPACE).",
)
@click.option(
    "--session",
    default="cli",
    envvar="PGMEM_SESSION",
    show_default=True,
    help="The session working memory belongs to, kept across commands (env PGMEM_SESSION).",
)
@click.pass_context
def cli(ctx: click.Context, as_json: bool, debug: bool, user: str, namespace: str, session: str) -> None:
    """hello_pgmem: memory and retrieval for LLM agents in one PostgreSQL."""
    ctx.obj = State(json=as_json, debug=debug, user=user, namespace=namespace, session=session)
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI, turning hello_pgmem errors into a message and exit code 1."""
    args = argv if argv is not None else sys.argv[1:]
    try:
        result = cli.main(args=args, prog_name="hello-pgmem", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 1
    except HelloPgmemError as exc:
        if "--debug" in args:
            raise
        click.echo(f"error: {exc}", err=True)
        return 1
    except SystemExit as exc:
        return int(exc.code or 0)
    return result if isinstance(result, int) else 0
