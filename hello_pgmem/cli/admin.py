"""Commands for the database and the deployment: db, migrate, downgrade, info, demo, reembed."""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import TYPE_CHECKING, Any

import click

from hello_pgmem.cli.app import State, cli, emit, load_settings, open_store
from hello_pgmem.cli.progress import progress_line

if TYPE_CHECKING:
    from hello_pgmem.core.settings import Settings
    from hello_pgmem.db import ServerInfo


def server_info(settings: Settings) -> ServerInfo:
    from hello_pgmem.db import connect, probe

    with connect(settings) as conn:
        return probe(conn, settings.schema_name, settings.graph_name)


def info_text(info: ServerInfo, settings: Settings) -> str:
    from hello_pgmem.db import migrations

    head = migrations.head_revision()
    age = (
        f"{info.age_version} (graph {settings.graph_name})"
        if info.age_version
        else "not used on Citus (it cannot be distributed): graph questions use the tables"
        if info.citus_version
        else "not installed: everything works except the Cypher interface"
    )
    state = "head" if info.revision == head else f"behind head {head}: run hello-pgmem migrate"
    citus = (
        [f"Citus       {info.citus_version} (coordinator; doctor checks the workers)"]
        if info.citus_version
        else []
    )
    return "\n".join(
        [
            f"server      PostgreSQL {info.server_version}",
            *citus,
            f"pgvector    {info.vector_version or 'missing'} (schema {info.vector_schema or '-'})",
            f"Apache AGE  {age}",
            f"schema      {info.schema} at revision {info.revision or 'none'} ({state})",
            f"functions   {', '.join(info.functions) or '-'}",
        ]
    )


def info_payload(info: ServerInfo) -> dict[str, Any]:
    from hello_pgmem.db import migrations

    payload = dataclasses.asdict(info)
    payload["functions"] = list(info.functions)
    payload["head"] = migrations.head_revision()
    return payload


@cli.group()
def db() -> None:
    """The local development database (PostgreSQL 17 + pgvector + AGE)."""


@db.command("up")
@click.pass_obj
def db_up(state: State) -> None:
    """Start the development database (or check DATABASE_URL) and print its URL."""
    from hello_pgmem import dev

    url = dev.up()
    emit(state, {"url": url}, url)


@db.command("down")
def db_down() -> None:
    """Stop the development database started by "db up"."""
    from hello_pgmem import dev

    click.echo(dev.down())


@db.command("status")
@click.pass_obj
def db_status(state: State) -> None:
    """Say whether the database answers; exit code 1 when it does not."""
    from hello_pgmem import dev

    ok, text = dev.status()
    emit(state, {"up": ok, "detail": text}, text)
    if not ok:
        sys.exit(1)


@db.command("url")
@click.pass_obj
def db_url(state: State) -> None:
    """Print the database URL in use."""
    from hello_pgmem import dev

    url = dev.database_url()
    emit(state, {"url": url}, url)


@cli.command()
@click.option("--revision", default="head", show_default=True, help="Target revision.")
@click.pass_obj
def migrate(state: State, revision: str) -> None:
    """Create or upgrade the schema (idempotent), then print what the database offers. Memories
    stored before their context windows were kept get them after the upgrade, with a progress line
    (resumable: run it again after an interruption)."""
    from hello_pgmem.ops.migrate import upgrade

    settings = load_settings()
    upgrade(settings, revision, progress=progress_line("contexts", "memories"))
    info = server_info(settings)
    emit(state, info_payload(info), info_text(info, settings))


@cli.command()
@click.argument("revision")
@click.option("--yes", is_flag=True, help="Confirm; downgrading to base drops every table.")
def downgrade(revision: str, yes: bool) -> None:
    """Migrate the schema down to REVISION ("base" removes everything of hello_pgmem)."""
    if not yes:
        raise click.UsageError("downgrade drops data: add --yes to confirm")
    from hello_pgmem.db import migrations

    migrations.downgrade(load_settings(), revision)


@cli.command()
@click.pass_obj
def info(state: State) -> None:
    """Print server version, extension versions, schema revision and SQL functions."""
    settings = load_settings()
    found = server_info(settings)
    emit(state, info_payload(found), info_text(found, settings))


@cli.command()
@click.pass_obj
def demo(state: State) -> None:
    """Bring the database up, migrate it, and run the reference scenarios (offline unless an
    LLM is configured)."""
    from hello_pgmem import dev
    from hello_pgmem.demo import full_demo
    from hello_pgmem.ops.migrate import upgrade
    from hello_pgmem.store import Store

    settings = load_settings() if os.environ.get("DATABASE_URL") else load_settings(database_url=dev.up())
    upgrade(settings)
    found = server_info(settings)
    with Store(settings) as store:
        report = list(full_demo(store))
    if state.json:
        emit(state, {**info_payload(found), "report": report}, "")
    else:
        click.echo("hello_pgmem is ready\n" + info_text(found, settings))
        click.echo("\n".join(report))


@cli.command()
@click.option("--all-users", is_flag=True, help="Every user's memories, not only --user's.")
@click.option("--batch-size", default=256, show_default=True, type=click.IntRange(1, 10_000))
@click.pass_obj
def reembed(state: State, all_users: bool, batch_size: int) -> None:
    """Move memories to the configured embedding model, in batches (resumable)."""
    from hello_pgmem.embedding import create_embedder
    from hello_pgmem.memory import reembed as reembed_memories

    with open_store() as store:
        db = store.db
        embedder = create_embedder(db.settings)
        done = reembed_memories(db, embedder, None if all_users else state.user, batch_size=batch_size)
    emit(
        state,
        {"reembedded": done, "model": embedder.model_name},
        f"re-embedded {done} memories with {embedder.model_name}",
    )
