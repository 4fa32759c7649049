"""Commands over the knowledge base of ``--namespace``: ingest and ask."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from hello_pgmem.cli.app import State, cli, database, emit
from hello_pgmem.db import Database
from hello_pgmem.embedding import create_embedder
from hello_pgmem.llm import create_chat_client
from hello_pgmem.rag.knowledge import KnowledgeBase
from hello_pgmem.rag.models import IngestResult

PARTIAL_FAILURE = 3


@contextmanager
def knowledge_base(state: State, db: Database) -> Iterator[KnowledgeBase]:
    settings = db.settings
    yield KnowledgeBase(db, create_embedder(settings), state.namespace, llm=create_chat_client(settings))


def result_table(results: list[IngestResult]) -> str:
    width = max((len(r.source_path or r.document_id) for r in results), default=4)
    lines = [f"{'file':<{width}}  {'status':<9} {'chunks':>6} {'embedded':>8} {'ms':>6}"]
    for r in results:
        lines.append(
            f"{(r.source_path or r.document_id):<{width}}  {r.status:<9} {r.chunks:>6} {r.embedded:>8} "
            f"{r.elapsed_ms:>6}" + (f"  {r.error}" if r.error else "")
        )
    return "\n".join(lines)


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--chunk-size", default=800, show_default=True, type=int)
@click.option("--chunk-overlap", default=100, show_default=True, type=int)
@click.pass_obj
def ingest(state: State, paths: tuple[Path, ...], chunk_size: int, chunk_overlap: int) -> int:
    """Add files and folders to --namespace; exit code 3 when some files failed."""
    with (
        database() as db,
        knowledge_base(state, db) as kb,
        click.progressbar(length=0, label="ingesting", file=sys.stderr, hidden=state.json) as bar,
    ):

        def progress(done: int, total: int, result: IngestResult) -> None:
            bar.length = total
            bar.update(1)

        results = kb.ingest(paths, chunk_size=chunk_size, chunk_overlap=chunk_overlap, progress=progress)
    emit(state, results, result_table(results))
    return PARTIAL_FAILURE if any(r.status == "failed" for r in results) else 0


@cli.command()
@click.argument("question")
@click.option("--limit", default=5, show_default=True, type=int)
@click.option("--max-chars", default=1200, show_default=True, type=int)
@click.option("--advanced", is_flag=True, help="MQE and HyDE query expansion (needs an LLM).")
@click.pass_obj
def ask(state: State, question: str, limit: int, max_chars: int, advanced: bool) -> None:
    """Answer QUESTION from --namespace with [n] citations (passages only without an LLM)."""
    with database() as db, knowledge_base(state, db) as kb:
        answer = kb.ask(question, limit, max_chars=max_chars, enable_mqe=advanced, enable_hyde=advanced)
    lines = [answer.answer if answer.answer is not None else f"{answer.notice}\n\n{answer.context}"]
    if answer.sources:
        lines.append("\nsources:")
        lines += [
            f"[{s.number}] {s.document_id} {' > '.join(s.heading_path)} ({s.score:.3f})"
            for s in answer.sources
        ]
    emit(state, answer, "\n".join(lines))
