"""Waiting for vectors: a store, a manager and a knowledge base wait for their own rows (everyone's
only when asked), progress counts a scope's rows whoever embedded them, and ``worker --drain``
says what it did and what it left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hello_pgmem import Database, HashingEmbedder, Store
from hello_pgmem.cli import main
from hello_pgmem.embedding_queue import EmbeddingWorker, Pass, pending

QUEUED = {"embed": "queue", "embedding_queue_workers": 0, "search_catch_up": 0}


@pytest.fixture()
def queued(clean: Database) -> Database:
    """The session database with every write queued and no worker of this process."""
    return Database(clean.settings.model_copy(update=QUEUED))


def test_a_store_waits_for_the_rows_it_handed_out_not_for_other_namespaces(queued: Database) -> None:
    """docs/python.md's queue sample while another namespace holds 100 queued chunks: the wait
    embeds alice's two memories and leaves the other namespace's chunks to their workers."""
    embedder = HashingEmbedder()
    with queued as db, Store(database=db, embedder=embedder) as store:
        other = Store(database=db, embedder=embedder).knowledge("elsewhere")
        for n in range(100):
            other.add_text(f"Paragraph {n} of a long manual.", f"part-{n}")
        queued_chunks = pending(db, "chunk", "elsewhere", embedder.model_name).rows
        assert queued_chunks == 100
        memory = store.memory("alice")
        memory.add_memories(["Alice moved to Berlin in May", "Alice's sister lives in Lyon"], "episodic")
        assert store.wait_for_embeddings(timeout=60) == 2
        assert pending(db, "memory", "alice", embedder.model_name).rows == 0
        assert pending(db, "chunk", "elsewhere", embedder.model_name).rows == queued_chunks
        assert store.wait_for_embeddings(everyone=True, timeout=60) == queued_chunks
        assert pending(db, "chunk", "elsewhere", embedder.model_name).rows == 0


def test_a_store_that_handed_out_nothing_has_nothing_to_wait_for(queued: Database) -> None:
    embedder = HashingEmbedder()
    with queued as db:
        Store(database=db, embedder=embedder).memory("bea").add_memory("Bea sails", "episodic")
        assert Store(database=db, embedder=embedder).wait_for_embeddings() == 0
        assert pending(db, "memory", "bea", embedder.model_name).rows == 1
        with pytest.raises(Exception, match="everyone"):
            Store(database=db, embedder=embedder).wait_for_embeddings(everyone="yes")  # type: ignore[arg-type]


def test_progress_counts_the_scopes_rows_whoever_embedded_them(queued: Database) -> None:
    """Three of six rows are embedded by another worker while the wait runs: the wait embeds three,
    and its progress ends at six done, none left."""
    embedder = HashingEmbedder()
    with queued as db:
        memory = Store(database=db, embedder=embedder).memory("cyd")
        memory.add_memories([f"Cyd's note {n}" for n in range(6)], "episodic")
        seen: list[tuple[int, int]] = []

        def progress(done: int, left: int) -> None:
            if not seen:  # another worker takes half, before this wait claims anything
                other = EmbeddingWorker(db, embedder)
                other.embed_and_store(other.claim("memory", "cyd", 3), Pass(), None)
            seen.append((done, left))

        assert memory.wait_for_embeddings(progress=progress) == 3, seen
        assert seen[0] == (0, 6) and seen[-1] == (6, 0), seen


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture()
def queued_cli(clean: Database, monkeypatch: pytest.MonkeyPatch) -> Database:
    monkeypatch.setenv("DATABASE_URL", clean.settings.database_url)
    monkeypatch.setenv("PGMEM_EMBED", "queue")
    monkeypatch.setenv("PGMEM_EMBEDDING_QUEUE_WORKERS", "0")
    monkeypatch.setenv("PGMEM_SEARCH_CATCH_UP", "0")
    return clean


def test_drain_reports_what_it_embedded_and_why_rows_still_wait(
    queued_cli: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    user = ["--user", "drainer"]
    for n in range(4):
        assert run([*user, "add", f"Dee's note {n}", "--type", "episodic"], capsys)[0] == 0
    embedder = HashingEmbedder()
    with Database(queued_cli.settings) as db:
        held = EmbeddingWorker(db, embedder).claim("memory", "drainer", 1)  # another worker's, leased
        assert len(held) == 1
        code, out, err = run([*user, "worker", "--drain"], capsys)
        assert code == 3, (out, err)
        assert "embedded 3, 1 still waiting (1 held by other workers)" in out
        assert "embedded: 3 of 4 rows" in err, err
        code, out, _ = run([*user, "--json", "worker", "--drain"], capsys)
        report = json.loads(out)
        assert code == 3 and report["embedded"] == 0 and report["waiting"] == 1 and "held" in report["why"]
        EmbeddingWorker(db, embedder).release(held)
    code, out, _ = run([*user, "worker", "--drain"], capsys)
    assert code == 0 and "embedded 1, 0 still waiting" in out


def test_ingest_wait_prints_one_line_per_update_with_the_namespaces_count(
    queued_cli: Database, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for n in range(3):
        (tmp_path / f"{n}.md").write_text(
            f"# Clock {n}\n\nA pendulum clock {n} needs winding.\n", encoding="utf-8"
        )
    code, _, err = run(["--namespace", "waits", "ingest", str(tmp_path), "--wait"], capsys)
    assert code == 0
    updates = [line for line in err.splitlines() if line.startswith("embedding:")]
    assert updates and updates[-1] == "embedding: 3 of 3 chunks", err
    assert all(len(line) < 60 for line in updates), "one update a line"
