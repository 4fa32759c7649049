"""Commands over the memories of ``--user``: add, search, summary, forget, consolidate, stats, graph."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click

from hello_pgmem.cli.app import State, cli, database, emit
from hello_pgmem.models import MEMORY_TYPES
from hello_pgmem.tools.memory_tool import MemoryTool, memory_line

TYPES = click.Choice(MEMORY_TYPES)


@contextmanager
def memory_tool(state: State) -> Iterator[MemoryTool]:
    """The memory tool of ``--user`` with every memory type enabled."""
    with database() as db:
        yield MemoryTool(
            user_id=state.user, database=db, memory_types=list(MEMORY_TYPES), session_id=state.session
        )


@cli.command()
@click.argument("content")
@click.option("--type", "memory_type", type=TYPES, default="working", show_default=True)
@click.option("--importance", type=float, help="0-1; estimated when omitted.")
@click.option("--file", "file_path", help="The media file of a perceptual memory.")
@click.option("--modality", type=click.Choice(["text", "image", "audio", "video"]))
@click.pass_obj
def add(
    state: State,
    content: str,
    memory_type: str,
    importance: float | None,
    file_path: str | None,
    modality: str | None,
) -> None:
    """Add a memory for --user and print its id."""
    with memory_tool(state) as tool:
        meta: dict[str, str] = {}
        if file_path:
            meta["file_path"] = file_path
        if modality:
            meta["modality"] = modality
        memory_id = tool.memory_manager.add_memory(content, memory_type, importance, meta)
    emit(state, {"id": str(memory_id), "memory_type": memory_type}, str(memory_id))


@cli.command()
@click.argument("query")
@click.option("--limit", default=5, show_default=True, type=int)
@click.option("--type", "memory_types", type=TYPES, multiple=True, help="Repeat to search several types.")
@click.option("--min-importance", default=0.0, show_default=True, type=float)
@click.pass_obj
def search(
    state: State, query: str, limit: int, memory_types: tuple[str, ...], min_importance: float
) -> None:
    """Search --user's memories, best first, with each score component in --json."""
    with memory_tool(state) as tool:
        found = tool.memory_manager.retrieve_memories(
            query, memory_types=list(memory_types) or None, limit=limit, min_importance=min_importance
        )
    lines = [f"{i}. ({item.score or 0:.3f}) {memory_line(item, 80)}" for i, item in enumerate(found, 1)]
    emit(state, found, "\n".join(lines) or f"no memory matches {query!r}")


@cli.command()
@click.option("--limit", default=10, show_default=True, type=int, help="Important memories to list.")
@click.pass_obj
def summary(state: State, limit: int) -> None:
    """Counts per type and the most important memories of --user."""
    with memory_tool(state) as tool:
        text = tool.summary(limit)
        payload = {
            "stats": tool.memory_manager.get_memory_stats(),
            "important": tool.memory_manager.important_memories(limit=limit),
        }
    emit(state, payload, text)


@cli.command()
@click.option(
    "--strategy",
    type=click.Choice(["importance_based", "time_based", "capacity_based"]),
    default="importance_based",
    show_default=True,
)
@click.option("--threshold", default=0.1, show_default=True, type=float)
@click.option("--max-age-days", default=30.0, show_default=True, type=float)
@click.pass_obj
def forget(state: State, strategy: str, threshold: float, max_age_days: float) -> None:
    """Forget --user's memories by importance, age or capacity; print how many."""
    with memory_tool(state) as tool:
        count = tool.memory_manager.forget_memories(strategy, threshold, max_age_days)
    emit(state, {"forgotten": count, "strategy": strategy}, f"forgot {count} memories ({strategy})")


@cli.command()
@click.option("--from", "from_type", default="working", show_default=True, type=TYPES)
@click.option("--to", "to_type", default="episodic", show_default=True, type=TYPES)
@click.option("--threshold", default=0.7, show_default=True, type=float, help="Minimum importance.")
@click.pass_obj
def consolidate(state: State, from_type: str, to_type: str, threshold: float) -> None:
    """Move --user's important memories to a longer-lived type; print how many."""
    with memory_tool(state) as tool:
        count = tool.memory_manager.consolidate_memories(from_type, to_type, threshold)
    emit(
        state,
        {"consolidated": count, "from": from_type, "to": to_type},
        f"consolidated {count} memories ({from_type} -> {to_type}, threshold {threshold})",
    )


@cli.command()
@click.pass_obj
def stats(state: State) -> None:
    """Memory counts of --user and the size of --namespace's knowledge base."""
    from hello_pgmem.cli.knowledge import knowledge_base

    with memory_tool(state) as tool:
        memory = tool.memory_manager.get_memory_stats()
        with knowledge_base(state, tool.memory_manager.db) as kb:
            documents = kb.stats()
    lines = [f"user {memory.user_id}: {memory.total_memories} memories"]
    lines += [
        f"  {kind}: {s.count} (forgotten {s.forgotten_count}, average importance {s.avg_importance:.2f})"
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
@click.pass_obj
def graph(state: State, entity: str, depth: int, target: str | None) -> None:
    """The knowledge graph of --user around ENTITY (or the path from ENTITY to --to)."""
    with memory_tool(state) as tool:
        manager = tool.memory_manager
        if target is not None:
            steps = manager.graph_path(entity, target)
            emit(state, steps, tool.graph(entity=entity, target=target))
            return
        hood = manager.graph_neighbourhood(entity, depth)
        emit(
            state,
            {"neighbourhood": hood, "memories": manager.entity_memories(entity)},
            tool.graph(entity=entity, depth=depth),
        )
