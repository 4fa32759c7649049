"""Commands over one memory of ``--user``: update, remove, history."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

import click

from hello_pgmem.cli.app import State, cli, emit
from hello_pgmem.cli.memory import memory
from hello_pgmem.core.errors import no_such

if TYPE_CHECKING:
    from hello_pgmem.memory import MemoryManager


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
        found = _resolved(state, manager, memory_id)
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
        found = _resolved(state, manager, memory_id)
        removed = manager.remove_memory(found)
    return _outcome(state, found, "removed", removed, "记忆已删除")


@cli.command()
@click.argument("memory_id")
@click.pass_obj
def history(state: State, memory_id: str) -> None:
    """Every version of one memory of --user, oldest first: what it said, when that held, and
    when the store believed it."""
    with memory(state) as manager:
        found = _resolved(state, manager, memory_id)
        versions = manager.memory_history(found)
        item = None if versions else manager.get_memory(found)
    if not versions:
        if item is None:
            raise no_such("memory", found, state.language)
        none = "工作记忆不保留版本" if state.zh else "a working memory keeps no versions"
        emit(state, versions, f"{none}: {found}")
        return
    from hello_pgmem.tools.memory_text import history_lines

    emit(state, versions, "\n".join(history_lines(versions, "zh" if state.zh else "en")))


def _resolved(state: State, manager: MemoryManager, memory_id: str) -> UUID:
    """The memory ``memory_id`` (a full id or a prefix of 8 characters or more) names, else the
    one "not found" error of every command."""
    found = manager.resolve_id(memory_id)
    if found is None:
        raise no_such("memory", memory_id, state.language)
    return found


def _outcome(state: State, memory_id: UUID, done: str, happened: bool, chinese: str) -> int:
    """Say that the change ``done`` (``chinese`` in Chinese) happened to the memory; no such memory
    is an error, as every "not found" is."""
    if not happened:
        raise no_such("memory", memory_id, state.language)
    emit(state, {"id": str(memory_id), done: happened}, chinese if state.zh else done)
    return 0
