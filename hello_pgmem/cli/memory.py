"""Commands over the memories of ``--user``: add, search, summary, forget, consolidate, stats, graph."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from uuid import UUID

import click

from hello_pgmem.cli.app import State, cli, emit, open_store, say_notes
from hello_pgmem.core.errors import InvalidInputError, no_such

if TYPE_CHECKING:
    from hello_pgmem.core.models import MemoryItem, TypeStats
    from hello_pgmem.memory import MemoryManager
    from hello_pgmem.tools.memory_tool import MemoryTool

MEMORY_TYPES = ("working", "episodic", "semantic", "perceptual")
TYPES = click.Choice(MEMORY_TYPES)


@contextmanager
def memory(state: State) -> Iterator[MemoryManager]:
    """The memory of --user (working memory of --session), every memory type enabled."""
    with open_store() as store:
        yield store.memory(state.user, state.session, types=MEMORY_TYPES)


@contextmanager
def memory_tool(state: State) -> Iterator[MemoryTool]:
    """The memory tool of --user, for the commands that show the tool's own wording."""
    with open_store() as store:
        yield store.memory_tool(state.user, types=MEMORY_TYPES, session_id=state.session)


def line(state: State, item: MemoryItem, size: int = 80) -> str:
    """One memory: type, preview, importance and full id (the tool's wording with --language zh)."""
    from hello_pgmem.tools.memory_text import memory_line

    if state.zh:
        return memory_line(item, size, "zh")
    preview = item.content[:size] + "..." if len(item.content) > size else item.content
    return f"[{item.memory_type}] {preview} (importance {item.importance:.2f}) [id {item.id}]"


@cli.command()
@click.argument("content")
@click.option("--type", "memory_type", type=TYPES, default="working", show_default=True)
@click.option("--importance", type=float, help="0-1; estimated when omitted.")
@click.option("--file", "file_path", help="The media file of a perceptual memory.")
@click.option("--modality", type=click.Choice(["text", "image", "audio", "video"]))
@click.option("--when", "timestamp", help="When it happened, ISO 8601 with a time zone (long-term types).")
@click.option("--wait", is_flag=True, help="Embed --user's queued memories before exiting (PGMEM_EMBED).")
@click.pass_obj
def add(
    state: State,
    content: str,
    memory_type: str,
    importance: float | None,
    file_path: str | None,
    modality: str | None,
    timestamp: str | None,
    wait: bool,
) -> None:
    """Add a memory for --user and print its id (CONTENT: at most 20,000 characters). A long-term
    memory is found by its words at once, by meaning once its vector is made (by a worker, the
    next search, or --wait)."""
    if (file_path or modality) and memory_type != "perceptual":  # not stored and forgotten
        field = "file" if file_path else "modality"
        raise InvalidInputError(field, "only a perceptual memory takes one (--type perceptual)")
    with memory(state) as manager:
        meta: dict[str, str] = {}
        if file_path:
            meta["file_path"] = file_path
        if modality:
            meta["modality"] = modality
        memory_id = manager.add_memory(content, memory_type, importance, meta, timestamp=timestamp)
        if wait and memory_type != "working":
            manager.wait_for_embeddings()
    emit(state, {"id": str(memory_id), "memory_type": memory_type}, str(memory_id))


@cli.command()
@click.argument("query")
@click.option("--limit", default=5, show_default=True, type=click.IntRange(1, 200), help="Memories to find.")
@click.option("--type", "memory_types", type=TYPES, multiple=True, help="Repeat to search several types.")
@click.option("--min-importance", default=0.0, show_default=True, type=click.FloatRange(0, 1))
@click.option(
    "--scoring",
    type=click.Choice(["hybrid", "lexical", "vector", "reference"]),
    help="Ranking (default: hybrid; reference is the chapter's formulas).",
)
@click.option(
    "--show-sql",
    is_flag=True,
    help="Print the SQL the search sends, its parameters as literals (run it in psql), and stop.",
)
@click.option("--valid-at", help="What held at this time (ISO 8601 with a time zone); default now.")
@click.option("--known-at", help="As the memory knew it then (ISO 8601 with a time zone); default now.")
@click.pass_obj
def search(
    state: State,
    query: str,
    limit: int,
    memory_types: tuple[str, ...],
    min_importance: float,
    scoring: str | None,
    show_sql: bool,
    valid_at: str | None,
    known_at: str | None,
) -> None:
    """Search --user's memories, best first, with each score component in --json."""
    options: dict[str, Any] = {
        "memory_types": list(memory_types) or None,
        "limit": limit,
        "min_importance": min_importance,
        "scoring": scoring,
        "valid_at": valid_at,
        "known_at": known_at,
    }
    from hello_pgmem.memory import MemorySearch

    request = MemorySearch(query, **options)
    with memory(state) as manager:
        if show_sql:
            sent = manager.search_sql(request)
            with manager.db.connection() as conn:
                text = sent.literal(conn)
            emit(state, {"sql": text}, text)
            return
        found = manager.search(request)
    lines = [f"{i}. ({item.score or 0:.3f}) {line(state, item)}" for i, item in enumerate(found, 1)]
    nothing = f"未找到与 '{query}' 相关的记忆" if state.zh else f"no memory matches {query!r}"
    emit(state, list(found), "\n".join(lines) or nothing)
    say_notes(state, found.notes(state.language), found.pending_embeddings)


def in_session(state: State, s: TypeStats) -> str:
    """How many of working memory's items (every session's) are the current session's."""
    if s.in_session is None:
        return ""
    if state.zh:
        return f"，当前会话 {s.in_session} 条，共 {s.sessions_count} 个会话"
    return f", {s.in_session} in session {state.session}, {s.sessions_count} sessions"


@cli.command()
@click.option(
    "--limit", default=10, show_default=True, type=click.IntRange(1, 200), help="Important memories to list."
)
@click.pass_obj
def summary(state: State, limit: int) -> None:
    """Counts per type and the most important memories of --user."""
    with memory_tool(state) as tool:
        stats = tool.memory_manager.get_memory_stats()
        important = tool.memory_manager.important_memories(limit=limit)
        text = tool.summary(limit) if state.zh else ""
    if not state.zh:
        lines = [f"memories of {stats.user_id}: {stats.total_memories} (session {state.session})"]
        lines += [
            f"  {kind}: {s.count} (average importance {s.avg_importance:.2f}{in_session(state, s)})"
            for kind, s in stats.memories_by_type.items()
        ]
        if important:
            lines += [
                "most important:",
                *(f"  {i}. {line(state, m, 60)}" for i, m in enumerate(important, 1)),
            ]
        text = "\n".join(lines)
    emit(state, {"stats": stats, "important": important}, text)


@cli.command()
@click.option(
    "--strategy",
    type=click.Choice(["importance_based", "time_based", "capacity_based"]),
    default="importance_based",
    show_default=True,
)
@click.option("--threshold", default=0.1, show_default=True, type=float)
@click.option("--max-age-days", default=30.0, show_default=True, type=float)
@click.option("--confirm", is_flag=True, help="Needed when the forget spares nothing (threshold 1, age 0).")
@click.pass_obj
def forget(state: State, strategy: str, threshold: float, max_age_days: float, confirm: bool) -> None:
    """Forget --user's memories by importance, age or capacity; print how many. Forgotten
    long-term memories come back with "restore" until "maintain" purges them."""
    with memory(state) as manager:
        count = manager.forget_memories(strategy, threshold, max_age_days, confirm=confirm)
    text = (
        f"已遗忘 {count} 条记忆（策略: {strategy}）" if state.zh else f"forgot {count} memories ({strategy})"
    )
    emit(state, {"forgotten": count, "strategy": strategy}, text)


@cli.command()
@click.option(
    "--id",
    "memory_ids",
    multiple=True,
    help="A memory to restore, or 8 characters of its id (repeat); default: all.",
)
@click.pass_obj
def restore(state: State, memory_ids: tuple[str, ...]) -> None:
    """Bring --user's forgotten long-term memories back (until "maintain" purges them)."""
    with memory(state) as manager:
        named = [forgotten_id(state, manager, given) for given in memory_ids]
        count = manager.restore_memories(named or None)
    emit(state, {"restored": count}, f"已恢复 {count} 条记忆" if state.zh else f"restored {count} memories")


@cli.command()
@click.option("--from", "from_type", default="working", show_default=True, type=TYPES)
@click.option("--to", "to_type", default="episodic", show_default=True, type=TYPES)
@click.option("--threshold", default=0.7, show_default=True, type=float, help="Minimum importance.")
@click.pass_obj
def consolidate(state: State, from_type: str, to_type: str, threshold: float) -> None:
    """Move --user's important memories to a longer-lived type; print how many."""
    with memory(state) as manager:
        count = manager.consolidate_memories(from_type, to_type, threshold)
    text = (
        f"已整合 {count} 条记忆（{from_type} → {to_type}，阈值={threshold}）"
        if state.zh
        else f"consolidated {count} memories ({from_type} -> {to_type}, threshold {threshold})"
    )
    emit(state, {"consolidated": count, "from": from_type, "to": to_type}, text)


@cli.command()
@click.pass_obj
def stats(state: State) -> None:
    """Memory counts of --user and the size of --namespace's knowledge base."""
    with open_store() as store:
        memory = store.memory(state.user, state.session, types=MEMORY_TYPES).get_memory_stats()
        documents = store.knowledge(state.namespace).stats()
    if state.zh:
        from hello_pgmem.tools.memory_text import LABELS as TYPE_LABELS

        lines = [f"用户 {memory.user_id}: {memory.total_memories} 条记忆"]
        lines += [
            f"  {TYPE_LABELS['zh'][kind]}: {s.count}（已遗忘 {s.forgotten_count}，"
            f"平均重要性 {s.avg_importance:.2f}{in_session(state, s)}）"
            for kind, s in memory.memories_by_type.items()
        ]
        lines.append(
            f"命名空间 {documents.namespace}: {documents.documents} 个文档，{documents.chunks} 个分块，"
            f"{documents.tokens} tokens（{documents.embedding_model}）"
        )
    else:
        lines = [f"user {memory.user_id}: {memory.total_memories} memories"]
        lines += [
            f"  {kind}: {s.count} (forgotten {s.forgotten_count}, average importance {s.avg_importance:.2f}"
            f"{in_session(state, s)})"
            for kind, s in memory.memories_by_type.items()
        ]
        lines.append(
            f"namespace {documents.namespace}: {documents.documents} documents, {documents.chunks} chunks, "
            f"{documents.tokens} tokens ({documents.embedding_model})"
        )
    emit(state, {"memory": memory, "knowledge": documents}, "\n".join(lines))


@cli.command()
@click.argument("entity")
@click.option("--depth", default=1, show_default=True, type=click.IntRange(1, 3))
@click.option("--to", "target", help="Show the shortest path to this entity instead.")
@click.option("--valid-at", help="The graph as it held at this time (ISO 8601 with a time zone).")
@click.option("--known-at", help="The graph as the memory knew it at this time (ISO 8601 with a time zone).")
@click.pass_obj
def graph(
    state: State, entity: str, depth: int, target: str | None, valid_at: str | None, known_at: str | None
) -> None:
    """The knowledge graph of --user around ENTITY (or the path from ENTITY to --to)."""
    with memory_tool(state) as tool:
        manager = tool.memory_manager
        text = tool.graph(entity=entity, depth=depth, target=target, valid_at=valid_at, known_at=known_at)
        if target is not None:
            emit(state, manager.graph_path(entity, target, valid_at=valid_at, known_at=known_at), text)
            return
        hood = manager.graph_neighbourhood(entity, depth, valid_at=valid_at, known_at=known_at)
        if hood is None:
            raise no_such("entity", entity, state.language)
        memories = manager.entity_memories(entity, limit=5, valid_at=valid_at, known_at=known_at)
        emit(state, {"neighbourhood": hood, "memories": memories}, text)


def forgotten_id(state: State, manager: MemoryManager, given: str) -> UUID:
    """The forgotten memory ``given`` (a full id or 8 characters or more of it) names, else the
    one "not found" error."""
    found = manager.resolve_id(given, forgotten=True)
    if found is None:
        raise no_such("forgotten memory", given, state.language)
    return found
