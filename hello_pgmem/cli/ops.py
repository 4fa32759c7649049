"""Commands for DBAs: doctor, check, grant, maintain, erase, export, import, citus."""

from __future__ import annotations

import dataclasses
import sys
from typing import BinaryIO, TextIO

import click

from hello_pgmem.cli.app import State, cli, emit, load_settings, open_store

UNHEALTHY = 1


@cli.command()
@click.option("--role", help="The application's role to check grants for (default: the connecting role).")
@click.pass_obj
def doctor(state: State, role: str | None) -> int:
    """Check server, extensions, schema, indexes, grants and settings; exit 1 on any error."""
    from hello_pgmem.ops.doctor import diagnose

    findings = diagnose(load_settings(), role)
    marks = {"ok": "ok   ", "warn": "WARN ", "error": "ERROR"}
    lines = []
    for f in findings:
        lines.append(f"{marks[f.level]} {f.check:<9} {f.message}")
        if f.fix and f.level != "ok":
            lines.append(f"      fix: {f.fix}")
    emit(state, [dataclasses.asdict(f) for f in findings], "\n".join(lines))
    return UNHEALTHY if any(f.level == "error" for f in findings) else 0


@cli.command()
@click.option(
    "--model", help="The embedding model every live memory must have (default: any registered one)."
)
@click.option(
    "--repair",
    is_flag=True,
    help="Queue every row whose vector is not of its text (vector_texts) for a new one, then check again.",
)
@click.pass_obj
def check(state: State, model: str | None, repair: bool) -> int:
    """Verify the store's invariants across every user; exit 1 on any violation (run as the owner)."""
    from hello_pgmem.ops.check import check_integrity, requeue_stale_vectors

    with open_store() as store:
        db = store.db
        queued = requeue_stale_vectors(db) if repair else None
        report = check_integrity(db, model)
    text = report.text()
    if queued is not None:
        text = f"repair: {queued} rows queued for the vector of their text\n{text}"
    emit(state, dataclasses.asdict(report) | {"ok": report.ok, "repaired": queued}, text)
    return 0 if report.ok else UNHEALTHY


@cli.command()
@click.option("--owner", help="Prepare this role to own the schema and migrate (before migrate).")
@click.option("--app", help="Grant this role what the application needs: rows, never DDL (after migrate).")
@click.option("--analytics", help="Grant this role read-only access to every user's rows (after migrate).")
@click.option("--create-roles", is_flag=True, help="CREATE ROLE … LOGIN for the roles that do not exist.")
@click.option("--apply", "run", is_flag=True, help="Run them (as a superuser); default: print them.")
@click.pass_obj
def grant(
    state: State, owner: str | None, app: str | None, analytics: str | None, create_roles: bool, run: bool
) -> None:
    """The SQL that sets up the owner, application and analytics roles (docs/security.md)."""
    if not (owner or app or analytics):
        raise click.UsageError("name at least one of --owner, --app, --analytics")
    from hello_pgmem.db import connect
    from hello_pgmem.ops import grants

    settings = load_settings()
    with connect(settings) as conn:
        statements = grants.owner_statements(conn, settings, owner, create_roles) if owner else []
        if app or analytics:
            statements += grants.role_statements(conn, settings, app, analytics, create_roles)
        script = grants.render(conn, statements)
        if run:
            grants.apply(conn, statements)
    emit(state, {"statements": script.splitlines(), "applied": run}, script.rstrip())


@cli.command()
@click.option(
    "--retention-days",
    default=30.0,
    show_default=True,
    type=click.FloatRange(0),
    help="Purge memories forgotten longer ago than this.",
)
@click.option("--max-memories", type=click.IntRange(1), help="Evict beyond this many live memories per user.")
@click.pass_obj
def maintain(state: State, retention_days: float, max_memories: int | None) -> None:
    """Expire working memory, apply decay, purge forgotten memories and old log rows, analyze.

    Idempotent: safe to run from cron or pg_cron.
    """
    from hello_pgmem.ops.maintain import maintain as run_maintenance

    with open_store() as store:
        db = store.db
        report = run_maintenance(db, retention_days=retention_days, max_memories=max_memories)
    emit(state, report, ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in report.items()))


@cli.command()
@click.option("--yes", is_flag=True, help="Confirm: this deletes every memory of --user.")
@click.pass_obj
def erase(state: State, yes: bool) -> None:
    """Erase everything of --user (all memory types, graph, log) in one transaction."""
    if not yes:
        raise click.UsageError(f"erase deletes everything of user {state.user!r}: add --yes to confirm")
    from hello_pgmem.ops.erase import erase_report

    with open_store() as store:
        db = store.db
        counts, left = erase_report(db, state.user)
    kept = f"\nleft in place: the documents of the shared namespaces {', '.join(left)}" if left else ""
    emit(
        state,
        {"user_id": state.user, "deleted": counts, "left_namespaces": left},
        f"erased user {state.user}: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + kept,
    )


@cli.command("export")
@click.option("--output", type=click.File("w", encoding="utf-8"), default="-", help="File (default stdout).")
@click.pass_obj
def export_command(state: State, output: TextIO) -> None:
    """Write --user's memories, graph and embeddings as JSON Lines."""
    from hello_pgmem.ops.transfer import export_user

    lines = 0
    with open_store() as store:
        db = store.db
        for line in export_user(db, state.user):
            output.write(line + "\n")
            lines += 1
    if output.name != "<stdout>":
        click.echo(f"exported {lines} lines of user {state.user} to {output.name}", err=True)


@cli.command("import")
@click.argument("source", type=click.File("rb"))
@click.option("--as-user", help="Import under this user id, whichever user the file holds.")
@click.pass_obj
def import_command(state: State, source: BinaryIO, as_user: str | None) -> None:
    """Read a JSON Lines export of --user (validated whole before anything is written); idempotent
    by id. A file of another user is refused unless --as-user names the user to import it as."""
    from hello_pgmem.core.errors import InvalidInputError
    from hello_pgmem.ops.transfer import import_user

    data = source.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            "source", f"must be UTF-8 JSON Lines, byte {exc.start} is {data[exc.start : exc.start + 1]!r}"
        ) from exc
    with open_store() as store:
        db = store.db
        counts = import_user(db, text.splitlines(keepends=True), state.user, as_user=as_user)
    emit(state, counts, "imported " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    sys.stdout.flush()


@cli.group()
def citus() -> None:
    """A Citus cluster: distribute a migrated schema over it."""


@citus.command("distribute")
@click.pass_obj
def citus_distribute(state: State) -> None:
    """Distribute the migrated schema over the cluster DATABASE_URL coordinates (as the schema's
    owner, after "hello-pgmem migrate" with PGMEM_AGE=off; idempotent)."""
    from hello_pgmem.ops.citus import distribute

    placed = distribute(load_settings())
    lines = [f"{table:<20} {how}" for table, how in placed.items()]
    emit(state, placed, "\n".join(lines))
