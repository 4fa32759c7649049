"""Commands over the knowledge base of ``--namespace``: ingest and ask."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from hello_pgmem.cli.app import State, cli, emit, open_store, say_notes
from hello_pgmem.cli.progress import progress_line
from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.rag.chunking import MAX_CHUNK_SIZE, MIN_CHUNK_SIZE
from hello_pgmem.rag.folders import MAX_BYTES, MAX_FILES

if TYPE_CHECKING:
    from hello_pgmem.rag.answer import Answer
    from hello_pgmem.rag.knowledge import KnowledgeBase
    from hello_pgmem.rag.models import IngestResult

PARTIAL_FAILURE = 3
NO_ANSWER = {
    "no_documents": "the namespace holds no documents: add some with ingest",
    "no_passages": "nothing in the knowledge base matches the question",
    "no_llm": "no chat model is configured (LLM_MODEL_ID): the most relevant passages instead of an answer",
    "llm_failed": "the chat model failed: the most relevant passages instead of an answer",
}


@contextmanager
def knowledge_base(state: State) -> Iterator[KnowledgeBase]:
    """The knowledge base of --namespace, from the command line's store."""
    with open_store() as store:
        yield store.knowledge(state.namespace)


def result_table(results: list[IngestResult]) -> str:
    width = max((len(r.source_path or r.document_id) for r in results), default=4)
    lines = [f"{'file':<{width}}  {'status':<9} {'chunks':>6} {'embedded':>8} {'queued':>6} {'ms':>6}"]
    for r in results:
        lines.append(
            f"{(r.source_path or r.document_id):<{width}}  {r.status:<9} {r.chunks:>6} {r.embedded:>8} "
            f"{r.queued:>6} {r.elapsed_ms:>6}" + (f"  {r.error}" if r.error else "")
        )
    return "\n".join(lines)


def file_line(number: int, total: int, result: IngestResult) -> str:
    """One file of an ingest as it is stored: searchable by its words from now on."""
    done = f"{result.chunks} chunks"
    if result.queued:
        done += f", {result.queued} queued for their vectors"
    elif result.embedded:
        done += f", {result.embedded} embedded"
    why = f": {result.error}" if result.error else ""
    return f"[{number}/{total}] {result.source_path or result.document_id}: {result.status} ({done}){why}"


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--chunk-size",
    default=800,
    show_default=True,
    type=click.IntRange(MIN_CHUNK_SIZE, MAX_CHUNK_SIZE),
    help="Tokens per chunk.",
)
@click.option(
    "--chunk-overlap",
    default=100,
    show_default=True,
    type=click.IntRange(0, MAX_CHUNK_SIZE // 2),
    help="Tokens repeated from the previous chunk (at most half of --chunk-size).",
)
@click.option("--wait", is_flag=True, help="Embed the queued chunks before exiting (PGMEM_EMBED).")
@click.option(
    "--max-files",
    default=MAX_FILES,
    show_default=True,
    type=click.IntRange(1),
    help="Refuse the ingest, storing nothing, when the paths hold more files.",
)
@click.option(
    "--max-bytes",
    default=MAX_BYTES,
    show_default=True,
    type=click.IntRange(1),
    help="Refuse the ingest, storing nothing, when the paths' files hold more bytes.",
)
@click.pass_obj
def ingest(
    state: State,
    paths: tuple[Path, ...],
    chunk_size: int,
    chunk_overlap: int,
    wait: bool,
    max_files: int,
    max_bytes: int,
) -> int:
    """Add files and folders to --namespace, each searchable by its words once stored; exit code 3
    when some files failed. Chunks are embedded in the write (PGMEM_EMBED=now, the hashing
    embedder) or queued for the embedding workers: --wait embeds them here, with progress. The
    filesystem root, system folders and the whole home folder are refused."""
    if chunk_overlap > chunk_size // 2:
        raise click.BadParameter("must be at most half of --chunk-size", param_hint="--chunk-overlap")
    started = time.perf_counter()
    terminal = sys.stderr.isatty()
    with (
        knowledge_base(state) as kb,
        click.progressbar(
            length=0, label="ingesting", file=sys.stderr, hidden=state.json or not terminal
        ) as bar,
    ):

        def progress(done: int, total: int, result: IngestResult) -> None:
            if terminal:
                bar.length = total
                bar.update(1)
            elif not state.json:
                click.echo(file_line(done, total, result), err=True)

        results = kb.ingest(
            paths,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            progress=progress,
            max_files=max_files,
            max_bytes=max_bytes,
        )
        if not results:
            raise InvalidInputError("PATH", f"holds no file to ingest: {', '.join(map(str, paths))}")
        stored = time.perf_counter() - started
        if wait:
            embed_queued(state, kb)
        waiting = kb.stats().pending_embeddings
    emit(state, results, result_table(results))
    if not state.json:
        click.echo(summary_line(results, stored, time.perf_counter() - started, waiting, wait), err=True)
    return PARTIAL_FAILURE if any(r.status == "failed" for r in results) else 0


def embed_queued(state: State, kb: KnowledgeBase) -> None:
    """Embed --namespace's queued chunks here, saying how many are done and left as it goes."""
    line = progress_line("embedding", "chunks")
    kb.wait_for_embeddings(progress=None if state.json else lambda done, left: line(done, done + left))


def summary_line(results: list[IngestResult], stored: float, total: float, waiting: int, waited: bool) -> str:
    """The whole ingest: files, chunks, how long until they were searchable, what still waits."""
    chunks = sum(r.chunks for r in results if r.status in ("added", "replaced"))
    line = f"{len(results)} files, {chunks} new chunks searchable by their words after {stored:.1f} s"
    if waited:
        line += f"; embedded after {total:.1f} s"
    if waiting:
        line += f"; {waiting} chunks wait for their vectors (hello-pgmem worker, or ingest --wait)"
    return line


def answer_text(state: State, answer: Answer) -> str:
    if answer.answer is not None:
        lines = [answer.answer]
    else:
        notice = (answer.notice or "") if state.zh else NO_ANSWER.get(answer.status, "")
        lines = [f"{notice}\n\n{answer.context}".strip()]
    if answer.sources:
        lines.append("\n来源：" if state.zh else "\nsources:")
        lines += [
            f"[{s.number}] {s.document_id} {' > '.join(s.heading_path)} "
            + (
                f"(得分 {s.score:.3f}，相似度 {s.similarity:.3f})"
                if state.zh
                else f"(score {s.score:.3f}, similarity {s.similarity:.3f})"
            )
            for s in answer.sources
        ]
    return "\n".join(lines)


@cli.command()
@click.argument("question")
@click.option(
    "--limit", default=5, show_default=True, type=click.IntRange(1, 100), help="Passages to retrieve."
)
@click.option(
    "--max-chars",
    type=click.IntRange(100),
    help="Characters of passages: the chat model's context (1200), or what is shown without one (6000).",
)
@click.option("--advanced", is_flag=True, help="MQE and HyDE query expansion (needs an LLM).")
@click.pass_obj
def ask(state: State, question: str, limit: int, max_chars: int | None, advanced: bool) -> None:
    """Answer QUESTION from --namespace with [n] citations (the passages themselves without an LLM)."""
    with knowledge_base(state) as kb:
        answer = kb.ask(question, limit, max_chars=max_chars, enable_mqe=advanced, enable_hyde=advanced)
    emit(state, answer, answer_text(state, answer))
    say_notes(state, answer.notes)
