"""Commands over one memory of ``--user``: update, remove, history."""

from __future__ import annotations

import click

from hello_pgmem.cli.app import State, cli, emit
from hello_pgmem.cli.memory import memory


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
    text = (
        ("记忆已更新" if changed else "未找到要更新的记忆")
        if state.zh
        else ("updated" if changed else "no such memory")
    )
    emit(state, {"id": str(found), "updated": changed}, text)
    return 0 if changed else 1


@cli.command()
@click.argument("memory_id")
@click.pass_obj
def remove(state: State, memory_id: str) -> int:
    """Remove one memory of --user (MEMORY_ID in full, or a prefix of at least 8 characters)."""
    with memory(state) as manager:
        found = manager.resolve_id(memory_id)
        removed = manager.remove_memory(found)
    text = (
        ("记忆已删除" if removed else "未找到要删除的记忆")
        if state.zh
        else ("removed" if removed else "no such memory")
    )
    emit(state, {"id": str(found), "removed": removed}, text)
    return 0 if removed else 1


@cli.command()
@click.argument("memory_id")
@click.pass_obj
def history(state: State, memory_id: str) -> None:
    """Every version of one memory of --user, oldest first: what it said, when that held, and
    when the store believed it."""
    with memory(state) as manager:
        versions = manager.memory_history(manager.resolve_id(memory_id))
    held_word, known_word = ("成立", "记录") if state.zh else ("held", "known")
    lines = []
    for v in versions:
        held = f"{v.valid_from.isoformat()} .. {v.valid_to.isoformat() if v.valid_to else ''}"
        known = f"{v.recorded_at.isoformat()} .. {v.superseded_at.isoformat() if v.superseded_at else ''}"
        mark = "*" if v.current else " "
        lines.append(f"{mark} {v.content}  ({held_word} {held}; {known_word} {known})")
    emit(state, versions, "\n".join(lines))
