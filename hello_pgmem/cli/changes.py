"""Commands over one memory of ``--user``: update, remove, history."""

from __future__ import annotations

from uuid import UUID

import click

from hello_pgmem.cli.app import State, cli, emit
from hello_pgmem.cli.memory import memory
from hello_pgmem.core.errors import NotFoundError


@cli.command()
@click.argument("memory_id")
@click.option("--content", help="The new text (the old one stays as an earlier version).")
@click.option("--importance", type=float, help="The new importance, 0 to 1.")
@click.option(
    "--valid-from", help="When the new text became true (ISO 8601 with a time zone); now by default."
)
@click.option("--correction", is_flag=True, help="The old text was never true: only what was known changes.")
@click.pass_obj
def update(
    state: State,
    memory_id: str,
    content: str | None,
    importance: float | None,
    valid_from: str | None,
    correction: bool,
) -> int:
    """Update one memory of --user (MEMORY_ID in full, or a prefix of at least 8 characters)."""
    with memory(state) as manager:
        found = manager.resolve_id(memory_id)
        changed = manager.update_memory(
            found, content, importance, valid_from=valid_from, correction=correction
        )
    return _outcome(state, found, "updated", changed, "记忆已更新")


@cli.command()
@click.argument("memory_id")
@click.pass_obj
def remove(state: State, memory_id: str) -> int:
    """Remove one memory of --user (MEMORY_ID in full, or a prefix of at least 8 characters)."""
    with memory(state) as manager:
        found = manager.resolve_id(memory_id)
        removed = manager.remove_memory(found)
    return _outcome(state, found, "removed", removed, "记忆已删除")


@cli.command()
@click.argument("memory_id")
@click.pass_obj
def history(state: State, memory_id: str) -> None:
    """Every version of one memory of --user, oldest first: what it said, when that held, and
    when the store believed it."""
    with memory(state) as manager:
        found = manager.resolve_id(memory_id)
        versions = manager.memory_history(found)
        item = None if versions else manager.get_memory(found)
    if not versions:
        if item is None:
            raise _no_such_memory(state, found)
        none = "工作记忆不保留版本" if state.zh else "a working memory keeps no versions"
        emit(state, versions, f"{none}: {found}")
        return
    from hello_pgmem.tools.memory_text import history_lines

    emit(state, versions, "\n".join(history_lines(versions, "zh" if state.zh else "en")))


def _no_such_memory(state: State, memory_id: UUID) -> NotFoundError:
    """The error of every command over one memory that is not there (``error:`` on stderr, exit 1)."""
    return NotFoundError(f"未找到记忆: {memory_id}" if state.zh else f"no such memory: {memory_id}")


def _outcome(state: State, memory_id: UUID, done: str, happened: bool, chinese: str) -> int:
    """Say that the change ``done`` (``chinese`` in Chinese) happened to the memory; no such memory
    is an error, as every "not found" is."""
    if not happened:
        raise _no_such_memory(state, memory_id)
    emit(state, {"id": str(memory_id), done: happened}, chinese if state.zh else done)
    return 0
