"""The ``hello-pgmem`` command line: a thin layer over the library.

Results go to stdout (``--json`` for machines), errors to stderr as one line (a JSON object with
``--json``) without a traceback unless ``--debug``. Exit codes: 0 success, 1 a hello_pgmem error
(bad input, database, model), 2 a usage error, 3 some files of an ingest failed (the others were
ingested). The CLI speaks one language, ``--language`` / ``PGMEM_LANGUAGE`` (``en`` by default,
or ``zh``), and so do the tools, the MCP server and the demo it starts (:func:`load_settings`).

Modules of the library are imported inside the commands, so that ``--help`` answers at once.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

import click
import psycopg

from hello_pgmem.core.errors import ConfigurationError, DatabaseUnavailableError, HelloPgmemError
from hello_pgmem.core.i18n import Language, check_language

if TYPE_CHECKING:
    from hello_pgmem.core.settings import Settings
    from hello_pgmem.store import Store

DOWN_HINT = (
    'start the development database with "hello-pgmem db up", or set DATABASE_URL to a reachable server'
)
PRIVILEGE_HINT = (
    "this command needs a role this one is not: tokens, grants and migrations are the schema owner's "
    "(docs/security.md)"
)


@dataclasses.dataclass
class State:
    json: bool = False
    debug: bool = False
    user: str = "default_user"
    namespace: str = "default"
    session: str = "cli"
    language: Language = "en"

    @property
    def zh(self) -> bool:
        return self.language == "zh"


FORWARDED_ALLOW_IPS = click.option(
    "--forwarded-allow-ips",
    metavar="ADDRESSES",
    help="HTTP: believe X-Forwarded-For only from these proxy addresses (comma-separated; default "
    "none: every client is counted at the address it connects from).",
)


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment, speaking the command line's --language (so that the tools,
    the MCP server and the demo it starts speak it too), with configuration mistakes as
    ConfigurationError."""
    from pydantic import ValidationError as PydanticValidationError

    from hello_pgmem.core.settings import Settings

    context = click.get_current_context(silent=True)
    if context is not None and isinstance(context.find_root().obj, State):
        overrides.setdefault("language", context.find_root().obj.language)
    try:
        return Settings(**overrides)
    except PydanticValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {str(err['msg']).removeprefix('Value error, ')}"
            for err in exc.errors()
        )
        raise ConfigurationError(f"invalid settings: {problems}") from exc


def jsonable(value: Any) -> Any:
    """Pydantic models, lists and dicts of them, ids and times, as plain JSON values."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


def emit(state: State, payload: Any, text: str) -> None:
    """``payload`` as JSON with --json, else ``text``."""
    click.echo(json.dumps(jsonable(payload), ensure_ascii=False, indent=2) if state.json else text)


@contextmanager
def open_store(background: bool = False) -> Iterator[Store]:
    """The store of the command line's settings (one pool for the command). A command that ends
    at once runs no embedding worker in the background (``--wait`` embeds in the foreground, and
    ``hello-pgmem worker`` apart); one that stays (``background``) runs the configured ones."""
    from hello_pgmem.store import connect

    settings = load_settings() if background else load_settings(embedding_queue_workers=0)
    with connect(settings=settings) as store:
        yield store


def say_notes(state: State, notes: list[str], pending_embeddings: int = 0) -> None:
    """What a search left out, on stderr: ``note: ...`` lines, or with --json one object
    (``{"notes": [...], "pending_embeddings": n}``), so that stdout keeps the results' shape."""
    if not notes:
        return
    if state.json:
        payload = {"notes": notes, "pending_embeddings": pending_embeddings}
        click.echo(json.dumps(payload, ensure_ascii=False), err=True)
        return
    for note in notes:
        click.echo(f"{'注意' if state.zh else 'note'}: {note}", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON (errors too).")
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
@click.option(
    "--language",
    type=click.Choice(["en", "zh"]),
    default="en",
    envvar="PGMEM_LANGUAGE",
    show_default=True,
    help="The language of the output, the tools and the MCP server (env PGMEM_LANGUAGE).",
)
@click.pass_context
def cli(
    ctx: click.Context, as_json: bool, debug: bool, user: str, namespace: str, session: str, language: str
) -> None:
    """hello_pgmem: memory and retrieval for LLM agents in one PostgreSQL."""
    ctx.obj = State(
        json=as_json,
        debug=debug,
        user=user,
        namespace=namespace,
        session=session,
        language=check_language(language),
    )
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )


def report_error(as_json: bool, kind: str, message: str, **details: Any) -> None:
    """One line on stderr: ``error: …`` (and a hint), or a JSON object with --json."""
    message = " ".join(message.split())  # server messages come over several lines
    if as_json:
        click.echo(json.dumps({"error": kind, "message": message, **details}, ensure_ascii=False), err=True)
        return
    click.echo(f"error: {message}", err=True)
    if details.get("hint"):
        click.echo(f"hint: {details['hint']}", err=True)


def show_usage(exc: click.ClickException) -> None:
    """The usage line and help hint of a command called wrongly (click's own, whose ``Error:``
    line becomes ``report_error``'s ``error:``)."""
    context = getattr(exc, "ctx", None)
    if context is None:
        return
    click.echo(context.get_usage(), err=True)
    if context.command.get_help_option(context) is not None:
        click.echo(f"Try '{context.command_path} --help' for help.\n", err=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI, turning hello_pgmem errors into a message and exit code 1."""
    args = argv if argv is not None else sys.argv[1:]
    as_json = "--json" in args
    try:
        result = cli.main(args=args, prog_name="hello-pgmem", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        if not as_json:
            show_usage(exc)
        report_error(as_json, "usage", exc.format_message())
        return exc.exit_code
    except click.exceptions.Abort:
        report_error(as_json, "aborted", "aborted")
        return 1
    except HelloPgmemError as exc:
        if "--debug" in args:
            raise
        details: dict[str, Any] = {}
        if field := getattr(exc, "field", None):
            details.update(field=field, rule=getattr(exc, "rule", None))
        if isinstance(exc, DatabaseUnavailableError):
            details["hint"] = DOWN_HINT
        report_error(as_json, type(exc).__name__, str(exc), **details)
        return 1
    except psycopg.errors.InsufficientPrivilege as exc:
        if "--debug" in args:
            raise
        report_error(
            as_json, "InsufficientPrivilege", exc.diag.message_primary or str(exc), hint=PRIVILEGE_HINT
        )
        return 1
    except SystemExit as exc:
        return int(exc.code or 0)
    return result if isinstance(result, int) else 0
