"""The embedding queue (sql/embedding_queue.sql, hello_pgmem.embedding_queue): writes store rows without
waiting for a model, workers make the vectors, searches never fail for a model.

Most tests use a store in ``PGMEM_EMBED=queue`` mode with no background worker, so that what
embeds and when is the test's to say; one test runs the background worker itself."""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from hello_pgmem import Database, HashingEmbedder, Store
from hello_pgmem.core.errors import EmbeddingError
from hello_pgmem.dev.trace import count_round_trips
from hello_pgmem.embedding_queue import EmbeddingWorker, Pass, wait_for_embeddings
from hello_pgmem.embedding_queue.priority import YIELD_NICE
from hello_pgmem.memory import MemoryManager
from hello_pgmem.ops.check import check_integrity
from tests.fake_openai import FakeOpenAI, serve
from tests.patience import patience


class Switchable(HashingEmbedder):
    """The hashing embedder, which can be taken down (every call then fails), made to refuse texts
    holding a word, or held inside its call until the test lets it go."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.refuses: str | None = None
        self.calls = 0
        self.inside = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.inside.set()
        self.release.wait(30)
        if self.down:
            raise EmbeddingError("the embedding model is down")
        if self.refuses and any(self.refuses in text for text in texts):
            raise EmbeddingError(f"the model refuses {self.refuses!r}")
        return super()._encode(texts)


@contextmanager
def queued_store(clean: Database, embedder: HashingEmbedder, **settings: Any) -> Iterator[Store]:
    """A store whose writes queue their vectors, with no background worker unless asked."""
    options = {"embed": "queue", "embedding_queue_workers": 0, **settings}
    with (
        Database(clean.settings.model_copy(update=options)) as db,
        Store(database=db, embedder=embedder) as store,
    ):
        yield store


def vectors_of(db: Database, user: str) -> dict[str, Any]:
    with db.transaction(user) as conn:
        rows = conn.execute("SELECT content, embedding FROM memories WHERE user_id = %s", (user,)).fetchall()
    return {content: embedding for content, embedding in rows}


def queue_rows(db: Database, user: str) -> list[tuple[Any, ...]]:
    """The user's queued memories (not their earlier versions, which wait too): text, generation,
    failures, last error, whether their retry time is still to come."""
    with db.transaction(user) as conn:
        return conn.execute(
            "SELECT m.content, q.generation, q.attempts, q.last_error, q.retry_at > now()"
            " FROM memory_embedding_queue q JOIN memories m ON m.user_id = q.user_id AND m.id = q.memory_id"
            " WHERE q.user_id = %s AND m.version_of IS NULL ORDER BY m.content",
            (user,),
        ).fetchall()


def backoff_passed(db: Database, user: str) -> None:
    """What the back-off's wait would do, at once: every failed row of the user is due."""
    with db.transaction(user) as conn:
        conn.execute(
            "UPDATE memory_embedding_queue SET retry_at = now() - interval '1 second' WHERE user_id = %s",
            (user,),
        )


def test_a_memory_is_found_by_its_words_before_its_vector_exists(clean: Database) -> None:
    with queued_store(clean, HashingEmbedder(), search_catch_up=0) as store:
        memory = store.memory("wren", types=["episodic"])
        memory.add_memory("Wren moved to Berlin in May", "episodic")
        assert vectors_of(store.db, "wren") == {"Wren moved to Berlin in May": None}
        [hit] = memory.retrieve_memories("Berlin", track_access=False)
        assert hit.content == "Wren moved to Berlin in May" and hit.components["text_score"] > 0
        assert not hit.components.get("vector_score")
        assert hit_notes(memory, "Berlin") == (
            1,
            ["1 row waits for its vector and is found by its words only until then"],
        )
        assert memory.wait_for_embeddings() == 1
        [hit] = memory.retrieve_memories("Berlin", track_access=False)
        assert hit.components["vector_score"] > 0
        assert hit_notes(memory, "Berlin") == (0, [])
        assert check_integrity(store.db).ok


def hit_notes(memory: MemoryManager, query: str) -> tuple[int, list[str]]:
    found = memory.retrieve_memories(query, track_access=False)
    return found.pending_embeddings, found.notes()


def test_a_search_right_after_an_add_embeds_the_few_queued_memories_itself(clean: Database) -> None:
    """The catch-up: what the user just wrote is found by meaning by the next search."""
    embedder = Switchable()
    with queued_store(clean, embedder) as store:
        memory = store.memory("ida", types=["episodic"])
        memory.add_memories(["Ida bakes sourdough bread", "Ida swims in the lake"], "episodic")
        assert embedder.calls == 0, "the write called no model"
        found = memory.retrieve_memories("sourdough", track_access=False)
        assert found.pending_embeddings == 0 and found[0].components["vector_score"] > 0
        assert all(vectors_of(store.db, "ida").values())


def test_a_search_embeds_itself_no_more_characters_than_its_catch_up_takes(clean: Database) -> None:
    """``PGMEM_SEARCH_CATCH_UP_CHARS``: the queued texts within it, in the queue's order, are
    embedded by the search; the first one longer than what is left, and those after it, wait for
    a worker."""
    with queued_store(clean, HashingEmbedder(), search_catch_up_chars=60) as store:
        memory = store.memory("ivo", types=["episodic"])
        memory.add_memory("Ivo rows at dawn", "episodic")  # queued first: its own transaction
        memory.add_memory("Ivo writes " + "a very long letter " * 5, "episodic")
        memory.retrieve_memories("rows", track_access=False)
        embedded = {text: vector is not None for text, vector in vectors_of(store.db, "ivo").items()}
        assert embedded == {"Ivo rows at dawn": True, "Ivo writes " + "a very long letter " * 5: False}


def test_a_search_waits_for_a_queued_row_a_worker_is_claiming_and_embeds_it(clean: Database) -> None:
    """A row another transaction holds when the search's catch-up claims (a worker's claim or
    store, here a transaction of the test's) is waited for, then embedded by the search: the
    search does not rank without it."""
    embedder = Switchable()
    with queued_store(clean, embedder) as store:
        memory = store.memory("uma", types=["episodic"])
        memory.add_memories(["Uma repairs clocks", "Uma grows tomatoes"], "episodic")
        found: list[Any] = []
        with store.db.transaction("uma") as holding:
            holding.execute(
                "SELECT 1 FROM memory_embedding_queue q JOIN memories m ON m.id = q.memory_id"
                " WHERE q.user_id = 'uma' AND m.content = 'Uma repairs clocks' FOR UPDATE OF q"
            )
            search = threading.Thread(
                target=lambda: found.extend(
                    memory.retrieve_memories("clocks", scoring="vector", track_access=False)
                )
            )
            search.start()
            deadline = time.monotonic() + patience(30)
            while search.is_alive() and not waits_for_a_lock(store.db) and time.monotonic() < deadline:
                time.sleep(0.02)
        search.join(patience(30))
        assert vectors_of(store.db, "uma")["Uma repairs clocks"] is not None
        assert found and found[0].content == "Uma repairs clocks"


def accesses_logged(db: Database, user: str) -> dict[str, int]:
    """How often each memory of the user was logged as found (by its text)."""
    with db.transaction(user) as conn:
        rows = conn.execute(
            "SELECT m.content, count(*) FROM memory_accesses a"
            " JOIN memories m ON m.user_id = a.user_id AND m.id = a.memory_id GROUP BY 1"
        ).fetchall()
    return {content: count for content, count in rows}


@pytest.mark.parametrize("scoring", ["vector", "hybrid"])
def test_a_search_of_a_queued_model_counts_what_waits_in_its_own_round_trip(
    clean: Database, scoring: str
) -> None:
    """Nothing waiting: one round trip (the count beside the ranking). Few fresh rows waiting: the
    search embeds them and ranks again, and every memory it returns is logged once, not twice."""
    with queued_store(clean, HashingEmbedder(), pool_min_size=1, pool_max_size=1) as store:
        memory = store.memory("una", types=["episodic"])
        memory.add_memories(["Una bakes sourdough bread", "Una swims in the lake"], "episodic")
        memory.wait_for_embeddings()
        memory.retrieve_memories("warm-up", track_access=False)
        found: list[Any] = []
        trips = count_round_trips(
            store.db, lambda: found.append(memory.retrieve_memories("bread", scoring=scoring))
        )
        assert trips["round_trips"] == 1, trips
        assert found[0].pending_embeddings == 0 and found[0][0].content == "Una bakes sourdough bread"
        assert accesses_logged(store.db, "una") == {item.content: 1 for item in found[0]}
        memory.add_memory("Una plays the cello on Sundays", "episodic")  # waits for its vector
        caught = memory.retrieve_memories("cello music", scoring=scoring)
        assert caught.pending_embeddings == 0 and caught[0].content == "Una plays the cello on Sundays"
        assert caught[0].components["vector_score"] > 0, "embedded by the search, then ranked"
        before = {item.content for item in found[0]}
        assert accesses_logged(store.db, "una") == {
            item.content: 1 + (item.content in before) for item in caught
        }


def test_a_search_leaves_many_waiting_rows_to_the_workers_and_logs_once(clean: Database) -> None:
    with queued_store(clean, HashingEmbedder(), search_catch_up=2) as store:
        memory = store.memory("vic", types=["episodic"])
        memory.add_memories([f"Vic's note {i} about the harbour" for i in range(3)], "episodic")
        found = memory.retrieve_memories("harbour", limit=3)
        assert found.pending_embeddings == 3, "three wait: more than a search embeds itself"
        assert accesses_logged(store.db, "vic") == {item.content: 1 for item in found}


@pytest.mark.parametrize("fresh", [False, True])
def test_a_claim_takes_no_more_rows_than_asked(clean: Database, fresh: bool) -> None:
    """A worker that asks for 3 of a scope's 8 rows holds 3 (the others stay claimable by other
    workers), memories and chunks alike."""
    embedder = HashingEmbedder()
    with queued_store(clean, embedder, search_catch_up=0) as store:
        store.memory("claimer").add_memories([f"Claimer's note {n}" for n in range(8)], "episodic")
        for n in range(8):
            store.knowledge("claimed-docs").add_text(f"Chapter {n} of the claimed book.", f"chapter-{n}")
        worker = EmbeddingWorker(store.db, embedder)
        assert len(worker.claim("memory", "claimer", 3, fresh=fresh)) == 3
        assert len(worker.claim("chunk", "claimed-docs", 3, fresh=fresh)) == 3
        assert len(EmbeddingWorker(store.db, embedder).claim("memory", "claimer", 8)) == 5


def test_a_vector_of_an_older_text_never_matches_a_row_queued_again(clean: Database) -> None:
    """The race of a worker and a waiting call: a worker claims a memory's row; a catch-up claims
    the same row (it takes fresh rows whoever holds them), stores its vector and dequeues it; an
    update queues the row again; the worker then stores its vector of the old text. The memory
    must end with the vector of its new text, or waiting for it."""
    embedder = HashingEmbedder()
    with queued_store(clean, embedder) as store:
        memory = store.memory("rae", types=["episodic"])
        memory_id = memory.add_memory("the ferry leaves at six", "episodic")
        worker, waiting = EmbeddingWorker(store.db, embedder), EmbeddingWorker(store.db, embedder)
        [held] = worker.claim("memory", "rae", 10)
        [caught] = waiting.claim("memory", "rae", 10, fresh=True)
        assert waiting.store([caught], list(embedder.encode_documents([caught.text]))) == 1
        assert memory.update_memory(memory_id, content="the night train leaves at eleven", correction=True)
        old_vector = list(embedder.encode_documents([held.text]))
        assert worker.store([held], old_vector) == 0, "the old text's vector matched the new request"
        new_vector = embedder.encode_documents(["the night train leaves at eleven"])[0]
        stored = vectors_of(store.db, "rae")["the night train leaves at eleven"]
        queued = [r[0] for r in queue_rows(store.db, "rae")]
        assert queued == ["the night train leaves at eleven"] or (
            stored is not None and np.allclose(stored.to_numpy(), new_vector, atol=1e-6)
        )
        memory.wait_for_embeddings()
        stored = vectors_of(store.db, "rae")["the night train leaves at eleven"]
        assert np.allclose(stored.to_numpy(), new_vector, atol=1e-6)
        assert check_integrity(store.db).ok


def test_a_claim_that_meets_an_edit_claims_the_edits_text_with_its_generation(clean: Database) -> None:
    """An edit holds its memory and its queue row, uncommitted, while a catch-up claims: the claim
    skips the row, or (had it waited) must come back with the edit's text for the edit's
    generation, never the older text it began with; the memory ends with the vector of its text."""
    embedder = HashingEmbedder()
    with queued_store(clean, embedder, search_catch_up=0) as store:
        memory = store.memory("edith", types=["episodic"])
        memory_id = memory.add_memory("the ferry leaves at six", "episodic")
        claimed: list[Any] = []
        with store.db.transaction("edith") as editing:
            editing.execute(
                "UPDATE memories SET content = 'the night train leaves at eleven' WHERE id = %s", (memory_id,)
            )
            claiming = threading.Thread(
                target=lambda: claimed.extend(
                    EmbeddingWorker(store.db, embedder).claim("memory", "edith", 10, fresh=True)
                )
            )
            claiming.start()
            deadline = time.monotonic() + patience(30)
            while claiming.is_alive() and not waits_for_a_lock(store.db) and time.monotonic() < deadline:
                time.sleep(0.02)
        claiming.join(patience(30))
        assert all(row.text == "the night train leaves at eleven" for row in claimed), claimed
        worker = EmbeddingWorker(store.db, embedder)
        worker.embed_and_store(claimed, Pass(), None)
        memory.wait_for_embeddings()
        stored = vectors_of(store.db, "edith")["the night train leaves at eleven"]
        expected = embedder.encode_documents(["the night train leaves at eleven"])[0]
        assert np.allclose(stored.to_numpy(), expected, atol=1e-6)
        assert check_integrity(store.db).ok


def waits_for_a_lock(db: Database) -> bool:
    """Whether some session of the database waits for a lock now."""
    with db.connection() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return bool(row and row[0])


def fingerprints(db: Database, user: str, namespace: str) -> list[tuple[str, bool | None]]:
    """Each row's text and whether the fingerprint kept with its vector is its text's (None: no
    fingerprint)."""
    with db.transaction(user, namespace=namespace) as conn:
        return conn.execute(
            "SELECT content, embedded_hash = vector_fingerprint(content) FROM memories WHERE user_id = %s"
            " UNION ALL SELECT content, embedded_hash = vector_fingerprint(content, heading_path)"
            " FROM chunks WHERE namespace = %s ORDER BY 1",
            (user, namespace),
        ).fetchall()


def test_a_vector_keeps_the_fingerprint_of_its_text_and_check_repairs_one_that_is_not(
    clean: Database, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A worker keeps the fingerprint of the text it claimed; a vector of an older text (what a
    worker racing an edit once wrote, the guard of generations bypassed here) is reported by
    check, and check --repair queues the row for the vector of its text."""
    from hello_pgmem.cli import main

    embedder = HashingEmbedder()
    with queued_store(clean, embedder, search_catch_up=0) as store:
        memory = store.memory("printed", types=["episodic"])
        [memory_id] = memory.add_memories(["Ada keeps bees"], "episodic")
        store.knowledge("printed-docs").add_text("# Bees\n\nAda keeps **bees** on the roof.", "bees")
        assert fingerprints(store.db, "printed", "printed-docs") == [
            ("# Bees\n\nAda keeps **bees** on the roof.", None),
            ("Ada keeps bees", None),
        ], "no vector yet, no fingerprint"
        assert store.wait_for_embeddings(everyone=True) == 2
        assert [ok for _, ok in fingerprints(store.db, "printed", "printed-docs")] == [True, True]
        assert EmbeddingWorker(store.db, embedder).claim("memory", "printed", 1, fresh=True) == []
        memory.update_memory(memory_id, content="Ada keeps wasps", correction=True)
        [held] = EmbeddingWorker(store.db, embedder).claim("memory", "printed", 1)
        old = embedder.encode_documents(["Ada keeps bees"])[0]
        with store.db.transaction("printed") as conn:  # the old text's vector, stored past the guard
            conn.execute("DELETE FROM memory_embedding_queue WHERE memory_id = %s", (memory_id,))
            conn.execute(
                "UPDATE memories SET embedding = %s, embedding_model = %s,"
                " embedded_hash = vector_fingerprint('Ada keeps bees') WHERE id = %s",
                (old, embedder.model_name, memory_id),
            )
        assert held.text == "Ada keeps wasps"
        found = {v.check: v for v in check_integrity(store.db).violations}
        assert set(found) == {"vector_texts"} and found["vector_texts"].sample == [
            f"memory printed/{memory_id}"
        ]
        monkeypatch.setenv("DATABASE_URL", clean.settings.database_url)
        assert main(["check", "--repair"]) == 0
        assert "repair: 1 rows queued for the vector of their text" in capsys.readouterr().out
        assert memory.wait_for_embeddings() == 1
        assert vectors_of(store.db, "printed")["Ada keeps wasps"] is not None
        assert check_integrity(store.db).ok


def test_a_row_edited_while_its_vector_is_made_gets_the_vector_of_its_new_text(clean: Database) -> None:
    embedder = HashingEmbedder()
    with queued_store(clean, embedder) as store:
        memory = store.memory("ned", types=["episodic"])
        memory_id = memory.add_memory("the ferry leaves at six", "episodic")
        worker = EmbeddingWorker(store.db, embedder)
        [claimed] = worker.claim("memory", "ned", 10)
        made = embedder.encode_documents([claimed.text])  # the old text's vector, in the worker's hands
        assert memory.update_memory(memory_id, content="the night train leaves at eleven")
        assert worker.store([claimed], list(made)) == 0, "a vector of the old text is not written"
        [(text, generation, *_)] = queue_rows(store.db, "ned")
        assert text == "the night train leaves at eleven" and generation > claimed.generation
        memory.wait_for_embeddings()  # the new text, and the old one's versions (as-of searches)
        stored = vectors_of(store.db, "ned")["the night train leaves at eleven"]
        expected = embedder.encode_documents(["the night train leaves at eleven"])[0]
        assert np.allclose(stored.to_numpy(), expected, atol=1e-6)
        assert check_integrity(store.db).ok


def test_a_failed_embedding_stays_queued_and_is_tried_again_after_its_back_off(
    clean: Database, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = Switchable()
    embedder.down = True
    caplog.set_level(logging.INFO, logger="hello_pgmem.embedding_queue")
    with queued_store(clean, embedder, search_catch_up=0) as store:
        memory = store.memory("ola", types=["episodic"])
        ids = memory.add_memories([f"Ola's note {n} about the harbour" for n in range(3)], "episodic")
        assert len(ids) == 3, "the write succeeded with the model down"
        worker = EmbeddingWorker(store.db, embedder)
        first = worker.run_once()
        assert (first.claimed, first.embedded, first.failed) == (3, 0, 3)
        rows = queue_rows(store.db, "ola")
        assert [(attempts, later) for _, _, attempts, _, later in rows] == [(1, True)] * 3
        assert all("the embedding model is down" in error for _, _, _, error, _ in rows)
        assert worker.run_once().claimed == 0, "not before its retry time"
        worker.run_once()
        embedder.down = False
        store.memory("oli", types=["episodic"]).add_memory("Oli's first note", "episodic")
        assert worker.run_once().embedded == 1  # the model answers again: the failed rows are due now
        assert [later for *_, later in queue_rows(store.db, "ola")] == [False] * 3
        assert worker.run_once().embedded == 3
        assert queue_rows(store.db, "ola") == []
        found = memory.retrieve_memories("harbour", track_access=False)
        assert found.pending_embeddings == 0 and found[0].components["vector_score"] > 0
    warnings = [
        r
        for r in caplog.records
        if r.levelno == logging.WARNING and r.name.startswith("hello_pgmem.embedding_queue")
    ]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]  # said once, not per part or row
    assert all(r.exc_info is None for r in caplog.records)
    assert any("succeed again" in r.getMessage() for r in caplog.records)


def test_a_text_the_model_refuses_is_embedded_alone_and_fails_no_other(clean: Database) -> None:
    embedder = Switchable()
    embedder.refuses = "poison"
    with queued_store(clean, embedder, search_catch_up=0) as store:
        memory = store.memory("pia", types=["episodic"])
        memory.add_memories(["apples", "pears", "a poison berry", "plums", "figs"], "episodic")
        worker = EmbeddingWorker(store.db, embedder)
        for _ in range(2):  # the whole part fails twice
            assert worker.run_once().failed == 5
            backoff_passed(store.db, "pia")
        third = worker.run_once()
        assert (third.embedded, third.failed) == (4, 1)
        assert [row[0] for row in queue_rows(store.db, "pia")] == ["a poison berry"]


class SmallParts(Switchable):
    """A model whose batch holds 8 texts or 3,000 characters."""

    batch_texts = 8
    batch_chars = 3_000


def test_tenants_take_turns_at_a_worker_whoever_queued_first_or_most(clean: Database) -> None:
    """One tenant queued 200 rows before another queued 3: the worker's first pass embeds one part
    of the first tenant's, its second the other tenant's rows, not the next part of the flood."""
    embedder = SmallParts()
    flooder, victim = (f"{name}_{uuid.uuid4().hex[:6]}" for name in ("mallory", "victor"))
    with queued_store(clean, embedder, search_catch_up=0) as store:
        store.memory(flooder, types=["episodic"]).add_memories(
            [f"flooding note {n}" for n in range(200)], "episodic"
        )
        store.memory(victim, types=["episodic"]).add_memories(["chess", "bread", "rowing"], "episodic")
        worker = EmbeddingWorker(store.db, embedder)
        assert worker.run_once().embedded == 8
        assert worker.run_once().embedded == 3
        assert all(vectors_of(store.db, victim).values())


def test_turns_count_the_work_done_so_a_tenant_of_short_texts_is_not_held_behind_long_ones(
    clean: Database,
) -> None:
    """One tenant's texts of 2,000 characters against another's of a few words, arriving one by
    one: after one long text, each short one is embedded next, not after another long one."""
    embedder = SmallParts()
    flooder, victim = (f"{name}_{uuid.uuid4().hex[:6]}" for name in ("mallory", "victor"))
    with queued_store(clean, embedder, search_catch_up=0) as store:
        store.memory(flooder, types=["episodic"]).add_memories(
            [f"{n} " + "long text " * 200 for n in range(10)], "episodic"
        )
        worker = EmbeddingWorker(store.db, embedder)
        assert worker.run_once().embedded == 1  # a long text: the first in the queue
        short = store.memory(victim, types=["episodic"])
        for text in ("chess on Monday", "bread on Tuesday", "rowing on Friday"):
            short.add_memory(text, "episodic")
            assert worker.run_once().embedded == 1
            assert vectors_of(store.db, victim)[text] is not None, text


class HeldWhenLong(SmallParts):
    """A model held inside each call with a text of more than 1,000 characters until released."""

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if any(len(text) > 1_000 for text in texts):
            self.inside.set()
            self.release.wait(patience(120))
        return HashingEmbedder._encode(self, texts)


def test_short_texts_are_embedded_while_a_long_one_is(clean: Database) -> None:
    """One worker, as by default, busy with a tenant's long text: another tenant's short memories
    get their vectors meanwhile, from the workers' short lane, and the long text after."""
    embedder = HeldWhenLong()
    embedder.release.clear()
    flooder, victim = (f"{name}_{uuid.uuid4().hex[:6]}" for name in ("mallory", "victor"))
    with queued_store(clean, embedder, search_catch_up=0, embedding_queue_workers=1) as store:
        try:
            store.memory(flooder, types=["episodic"]).add_memories(
                [f"{n} " + "long text " * 200 for n in range(3)], "episodic"
            )
            assert embedder.inside.wait(patience(30)), "a worker took the long text"
            store.memory(victim, types=["episodic"]).add_memories(["chess", "bread", "rowing"], "episodic")
            deadline = time.monotonic() + patience(30)
            while not all(vectors_of(store.db, victim).values()) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert all(vectors_of(store.db, victim).values()), "the short texts waited behind the long one"
            assert not any(vectors_of(store.db, flooder).values()), "the long texts are still held"
        finally:
            embedder.release.set()
        store.memory(flooder, types=["episodic"]).wait_for_embeddings(timeout=patience(60))
        assert all(vectors_of(store.db, flooder).values())


def test_the_workers_beside_a_short_lane_give_it_the_cores_first(clean: Database) -> None:
    """The background workers run at a lower CPU priority than their short lane (os.getpriority of
    each thread), so that under contention the lane's short texts are embedded first."""
    if not hasattr(os, "getpriority"):
        pytest.skip("no per-thread priorities on this system")
    with queued_store(clean, HashingEmbedder(), search_catch_up=0, embedding_queue_workers=1) as store:
        store.memory(f"nice_{uuid.uuid4().hex[:6]}", types=["episodic"]).add_memory("a note", "episodic")
        threads = [t for t in threading.enumerate() if t.name.startswith("hello_pgmem-embed-")]
        assert len(threads) == 2, [t.name for t in threads]  # one worker and its short lane
        base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        deadline = time.monotonic() + patience(30)
        while time.monotonic() < deadline:
            nice = sorted(os.getpriority(os.PRIO_PROCESS, t.native_id or 0) for t in threads)
            if nice == [base, min(19, base + YIELD_NICE)]:
                break
            time.sleep(0.05)
        assert nice == [base, min(19, base + YIELD_NICE)]


def test_a_write_past_the_queue_quota_is_refused_whole_and_names_it(clean: Database) -> None:
    """PGMEM_EMBEDDING_QUEUE_MAX_ROWS: a user (a namespace) with that many rows waiting for vectors may not
    queue more; the write is refused whole, the quota named, until the workers catch up."""
    from hello_pgmem.core.errors import BusyError

    embedder = HashingEmbedder()
    user = f"quota_{uuid.uuid4().hex[:6]}"
    with queued_store(clean, embedder, search_catch_up=0, embedding_queue_max_rows=5) as store:
        memory = store.memory(user, types=["episodic"])
        memory.add_memories([f"note {n}" for n in range(4)], "episodic")
        with pytest.raises(
            BusyError, match=r"user '.+' would have more than 5 rows waiting.*PGMEM_EMBEDDING_QUEUE_MAX_ROWS"
        ):
            memory.add_memories(["one", "two"], "episodic")
        assert len(queue_rows(store.db, user)) == 4, "nothing of the refused write is there"
        memory.add_memory("the fifth", "episodic")
        kb = store.knowledge(f"docs_{user}")
        text = "\n\n".join(f"# Part {n}\n\nThe text of part {n}." for n in range(8))
        with pytest.raises(BusyError, match=r"namespace '.+' would have more than 5 rows waiting"):
            kb.add_text(text, "manual", chunk_size=16, chunk_overlap=0)
        assert kb.stats().documents == 0
        memory.wait_for_embeddings()
        memory.add_memories(["after", "the", "workers"], "episodic")


def test_the_queue_s_settings_are_named_by_the_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each setting of the embedding queue is PGMEM_EMBEDDING_QUEUE_* (the field embedding_queue_*);
    the earlier names (PGMEM_EMBED_WORKERS, PGMEM_QUEUE_MAX_ROWS, ``embed_workers``, ...) are read
    too, and the new name wins where both are set."""
    from hello_pgmem import Settings

    queue = [name for name in Settings.model_fields if "queue" in name]
    assert len(queue) == 7 and all(name.startswith("embedding_queue_") for name in queue), queue
    for name in queue:
        env = Settings.model_fields[name].validation_alias.choices[0]  # type: ignore[union-attr]
        assert env == "PGMEM_" + name.upper().removesuffix("_S"), (name, env)
    monkeypatch.setenv("PGMEM_EMBED_WORKERS", "3")
    monkeypatch.setenv("PGMEM_QUEUE_MAX_ROWS", "7")
    assert (Settings().embedding_queue_workers, Settings().embedding_queue_max_rows) == (3, 7)
    monkeypatch.setenv("PGMEM_EMBEDDING_QUEUE_WORKERS", "2")
    assert Settings().embedding_queue_workers == 2
    assert Settings.model_validate({"embed_workers": 0}).embedding_queue_workers == 0
    assert Settings(embedding_queue_workers=4).embedding_queue_workers == 4


def test_a_worker_leases_only_the_part_it_embeds(clean: Database) -> None:
    """Five rows of 2,000 characters, a batch of 3,000: a worker claims one row, and while it
    embeds it, another worker claims the other four."""
    embedder = SmallParts()
    user = f"long_{uuid.uuid4().hex[:6]}"
    with queued_store(clean, embedder, search_catch_up=0) as store:
        store.memory(user, types=["episodic"]).add_memories(
            [f"{n} " + "long text " * 200 for n in range(5)], "episodic"
        )
        embedder.release.clear()
        busy = threading.Thread(target=EmbeddingWorker(store.db, embedder).run_once)
        busy.start()
        try:
            assert embedder.inside.wait(patience(30))
            assert len(EmbeddingWorker(store.db, HashingEmbedder()).claim("memory", user, 10)) == 4
        finally:
            embedder.release.set()
            busy.join(patience(30))


def test_one_tenants_refused_text_fails_no_other_tenants_rows(clean: Database) -> None:
    """A part holds one tenant's rows: the text the model refuses fails its writer's row alone;
    the other tenant's rows are embedded and never carry its error."""
    embedder = SmallParts()
    embedder.refuses = "poison"
    flooder, victim = (f"{name}_{uuid.uuid4().hex[:6]}" for name in ("mallory", "victor"))
    with queued_store(clean, embedder, search_catch_up=0) as store:
        store.memory(flooder, types=["episodic"]).add_memory("a poison pill", "episodic")
        store.memory(victim, types=["episodic"]).add_memories(["chess", "bread"], "episodic")
        worker = EmbeddingWorker(store.db, embedder)
        passes = [worker.run_once(), worker.run_once()]
        assert [(p.embedded, p.failed) for p in passes] == [(0, 1), (2, 0)]
        assert queue_rows(store.db, victim) == []
        assert [(row[0], row[2]) for row in queue_rows(store.db, flooder)] == [("a poison pill", 1)]


def test_a_text_refused_on_its_own_keeps_its_back_off_when_others_succeed(clean: Database) -> None:
    """A model's return makes the rows that failed with its failure due at once. A text that then
    fails again on its own, while the model answers others, is the text's failure: it keeps its
    back-off however often other tenants' texts succeed (a paid endpoint is not called for it at
    every success)."""
    embedder = SmallParts()
    embedder.refuses = "poison"
    writer = f"pia_{uuid.uuid4().hex[:6]}"
    with queued_store(clean, embedder, search_catch_up=0) as store:
        store.memory(writer, types=["episodic"]).add_memory("a poison berry", "episodic")
        worker = EmbeddingWorker(store.db, embedder)
        for _ in range(3):  # twice in a part, once alone: nothing tells it from an outage yet
            assert worker.run_once().failed == 1
            backoff_passed(store.db, writer)
        for number in range(3):
            store.memory(f"otto_{number}_{writer}", types=["episodic"]).add_memory("plums", "episodic")
            assert worker.run_once().embedded == 1  # the model answers: the failed rows are due now
            if number == 0:
                assert worker.run_once().failed == 1  # the text again, alone: its own failure
        [(_, _, attempts, _, later)] = queue_rows(store.db, writer)
        assert attempts == 4 and later, "the refused text keeps its back-off"


def test_no_model_call_runs_while_the_users_write_lock_is_held(clean: Database) -> None:
    """A write that embeds itself embeds before its transaction, and a worker outside any: while
    the model is busy, another write of the same user goes through at once (a lock it waited
    for past 300 ms would fail it: no retries), and no transaction holds a writers' lock."""
    for mode in ("now", "queue"):
        slow = Switchable()
        with queued_store(clean, slow, embed=mode, lock_timeout_ms=300, retries=0) as store:
            user = f"lou_{mode}"
            memory = store.memory(user, types=["episodic"])
            if mode == "queue":
                memory.add_memories(["a queued batch of notes"] * 3, "episodic")
            slow.release.clear()
            busy = threading.Thread(
                target=memory.add_memories if mode == "now" else EmbeddingWorker(store.db, slow).run_once,
                args=(["a slow batch of notes"] * 3,) if mode == "now" else (),
            )
            busy.start()
            assert slow.inside.wait(10), "the model was called"
            beside = Store(database=store.db, embedder=HashingEmbedder()).memory(user, types=["episodic"])
            beside.items.put(
                uuid_of(mode), "a put beside the model call", 0.5, "lg.notes.", {"langgraph": {}}
            )
            assert not writers_lock_held(clean, user), "no writer holds the user's lock while the model works"
            slow.release.set()
            busy.join(10)
            assert check_integrity(store.db).ok


def uuid_of(mode: str) -> Any:
    import uuid

    return uuid.uuid5(uuid.NAMESPACE_URL, f"pgmem-test/{mode}")


def writers_lock_held(db: Database, user: str) -> int:
    """Whether a transaction holds ``user``'s write lock (sql/text.sql, ``lock_writers``: an
    advisory lock on a bigint key, shown as its high and low 32 bits)."""
    with db.connection() as conn:
        row: Any = conn.execute(
            "SELECT count(*) FROM pg_locks l,"
            " hashtextextended(%s, 'memory_text_totals'::regclass::oid::bigint) AS k"
            " WHERE l.locktype = 'advisory' AND l.granted"
            " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND l.classid::bigint = (k >> 32) & 4294967295 AND l.objid::bigint = k & 4294967295",
            (user,),
        ).fetchone()
    return int(row[0])


def test_a_write_does_not_wait_for_a_long_open_write_of_the_same_user(clean: Database) -> None:
    """A batch holds its user's write lock only in its last step, at commit: a put beside an open
    transaction of 2,000 memories goes through at once; the statistics are exact after both."""
    embedder = HashingEmbedder()
    with queued_store(clean, embedder, lock_timeout_ms=300, retries=0) as store:
        memory = store.memory("mae", types=["episodic"], session_id="s")
        memory.add_memory("the first note of mae", "episodic")
        episodic = memory._parts.episodic
        items = [
            memory._parts.new_item(f"mae's note {n} about rivers", "episodic", 0.5, {}, memory.clock())
            for n in range(2000)
        ]
        with episodic.transaction() as conn:
            episodic.write_rows(conn, episodic.rows(items))
            done = threading.Event()

            def put() -> None:
                memory.items.put(
                    uuid_of("mae"), "a put beside an open batch", 0.5, "lg.notes.", {"langgraph": {}}
                )
                done.set()

            beside = threading.Thread(target=put)
            beside.start()
            beside.join(10)
            assert done.is_set(), "the put went through while the batch was open"
        report = check_integrity(store.db)
        assert report.ok, report.text()
        with store.db.transaction("mae") as conn:
            assert conn.execute(
                "SELECT memories FROM memory_text_totals WHERE user_id = 'mae'"
            ).fetchone() == (2002,)


def test_a_lock_waited_for_past_its_time_is_tried_again(
    clean: Database, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hello_pgmem.core.retry")
    with queued_store(clean, HashingEmbedder(), embed="now", lock_timeout_ms=150, retries=6) as store:
        memory = store.memory("rae", types=["episodic"])
        memory_id = memory.add_memory("rae's first text", "episodic")
        holder = clean.connection()
        conn = holder.__enter__()
        conn.execute("SELECT set_config('pgmem.user_id', 'rae', true)")
        conn.execute("SELECT 1 FROM memories WHERE user_id = 'rae' AND id = %s FOR UPDATE", (memory_id,))
        timer = threading.Timer(0.5, lambda: holder.__exit__(None, None, None))
        timer.start()
        assert memory.update_memory(memory_id, content="rae's second text")
        timer.join()
    assert any("55P03" in r.getMessage() for r in caplog.records), "the lock timeout was retried"


def test_a_reranker_that_fails_leaves_the_first_stage_order_and_says_so(
    make_manager: Callable[..., MemoryManager], settings: Any
) -> None:
    with serve(FakeOpenAI(fail_status=503)) as fake:
        plain = make_manager("uma")
        plain.add_memories(
            [f"Uma bought bread number {n}" for n in range(6)] + ["Uma's sourdough rose"], "episodic"
        )
        first_stage = [m.id for m in plain.retrieve_memories("bread", limit=4, track_access=False)]
        update = {"rerank_base_url": fake.base_url, "rerank_model": "rerank-small"}
        with Store(settings=settings.model_copy(update=update), embedder=plain.embedder) as store:
            tool = store.memory_tool("uma", types=["episodic"])
            found = store.memory("uma", types=["episodic"]).retrieve_memories(
                "bread", limit=4, track_access=False
            )
            answer = tool.run("search", query="bread", limit=4)
        assert [m.id for m in found] == first_stage
        assert [d.stage for d in found.degraded] == ["rerank"]
        assert "the reranker failed" in answer and "first stage's order" in answer
        assert any(r["path"].endswith("/rerank") for r in fake.requests)


def test_a_query_that_cannot_be_embedded_is_ranked_by_its_words(clean: Database) -> None:
    embedder = Switchable()
    with queued_store(clean, embedder, embed="now") as store:
        memory = store.memory("kit", types=["episodic"])
        memory.add_memories(
            ["Kit plays the cello", "Kit repairs old bicycles", "rain again today"], "episodic"
        )
        other = Store(database=store.db, embedder=HashingEmbedder()).memory("kit", types=["episodic"])
        lexical = [
            m.id for m in other.retrieve_memories("cello bicycles", scoring="lexical", track_access=False)
        ]
        kb = store.knowledge("kit-docs")
        kb.add_text("# Cello\n\nKit plays the cello on Sundays.", "cello")
        embedder.down = True
        found = memory.retrieve_memories("cello bicycles", track_access=False)
        hits = kb.search("cello sundays")
        assert [m.id for m in found] == lexical
        assert [d.stage for d in found.degraded] == ["query_embedding"]
        assert [h.document_id for h in hits] == ["cello"] and [d.stage for d in hits.degraded] == [
            "query_embedding"
        ]


def test_waiting_for_a_model_that_is_down_says_how_many_rows_still_wait_and_why(clean: Database) -> None:
    embedder = Switchable()
    embedder.down = True
    with queued_store(clean, embedder, search_catch_up=0, embedding_queue_retry_s=0.05) as store:
        memory = store.memory("vic", types=["episodic"])
        memory.add_memories(["one note", "two notes", "three notes"], "episodic")
        with pytest.raises(EmbeddingError, match=r"3 rows still wait .* the embedding model is down"):
            memory.wait_for_embeddings(timeout=0.5)
        embedder.down = False
        assert wait_for_embeddings(store.db, embedder, [("memory", "vic")], timeout=patience(30)) == 3


def test_ingest_stores_chunks_searchable_by_their_words_and_queues_them(clean: Database) -> None:
    embedder = Switchable()
    with queued_store(clean, embedder, search_catch_up=0) as store:
        kb = store.knowledge("queued-docs")
        text = (
            "# Deploy\n\nRun the migration, then restart the workers.\n\n# Backup\n\nDump the schema nightly."
        )
        [result] = kb.add_texts([__import__("hello_pgmem").rag.knowledge.TextDocument(text, "ops")])
        assert (result.queued, result.embedded, embedder.calls) == (result.chunks, 0, 0)
        hits = kb.search("migration workers")
        assert hits and hits[0].document_id == "ops" and hits.pending_embeddings == result.chunks
        assert kb.stats().pending_embeddings == result.chunks
        assert kb.wait_for_embeddings() == result.chunks
        assert kb.stats().pending_embeddings == 0 and kb.search("migration workers")[0].vector_score > 0
        calls = embedder.calls
        copy = kb.add_text(text, "ops-copy")  # the namespace's cache has every vector
        assert (copy.queued, embedder.calls) == (0, calls)
        assert check_integrity(store.db).ok


def test_erase_takes_the_users_queue_and_an_export_says_what_waits(clean: Database) -> None:
    from hello_pgmem.ops.erase import erase_user
    from hello_pgmem.ops.transfer import export_user, import_user

    embedder = HashingEmbedder()
    with queued_store(clean, embedder, search_catch_up=0) as store:
        memory = store.memory("zed", types=["episodic"])
        memory.add_memories(["zed's first", "zed's second"], "episodic")
        lines = list(export_user(store.db, "zed"))
        assert sum('"queued": true' in line and embedder.model_name in line for line in lines) == 2
        assert import_user(store.db, lines, as_user="zoe")["memory"] == 2
        assert len(queue_rows(store.db, "zoe")) == 2, "an imported memory waits again"
        counts = erase_user(store.db, "zed")
        assert counts["memory_embedding_queue"] == 2 and queue_rows(store.db, "zed") == []


def test_an_erase_while_a_worker_holds_chunks_leaves_no_vector_of_their_text(clean: Database) -> None:
    """A worker claimed a user's chunks; the user is erased while it embeds them: its store
    writes nothing, not even to the embedding cache."""
    from hello_pgmem.access import personal_namespace
    from hello_pgmem.embedding_queue.cache import cache_key
    from hello_pgmem.ops.erase import erase_user

    embedder = HashingEmbedder()
    user = f"erin_{uuid.uuid4().hex[:6]}"
    own = personal_namespace(user)
    with queued_store(clean, embedder, search_catch_up=0) as store:
        store.knowledge(own).add_text("# Diary\n\nErin's plan for the winter, told to no one.", "diary")
        worker = EmbeddingWorker(store.db, embedder)
        claimed = worker.claim("chunk", own, 10)
        assert claimed
        assert erase_user(store.db, user)["chunk_embedding_queue"] == len(claimed)
        done = Pass()
        worker.embed_and_store(claimed, done, None)
        assert done.embedded == 0
        keys = [cache_key(own, row.text) for row in claimed]
        with store.db.connection() as conn:
            row = conn.execute(
                "SELECT count(*) FROM embedding_cache WHERE content_hash = ANY(%s)", (keys,)
            ).fetchone()
        assert row == (0,)


def test_the_background_worker_embeds_a_write_and_stops_with_its_store(clean: Database) -> None:
    embedder = HashingEmbedder()
    before = set(threading.enumerate())  # another test's store may still be closing its own
    with queued_store(clean, embedder, embedding_queue_workers=1, search_catch_up=0) as store:
        memory = store.memory("bo", types=["episodic"])
        memory.add_memory("Bo keeps bees on the roof", "episodic")
        deadline = time.monotonic() + patience(20)
        while not all(vectors_of(store.db, "bo").values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(vectors_of(store.db, "bo").values()), "embedded without anyone waiting"
        workers = [
            t for t in threading.enumerate() if t.name.startswith("hello_pgmem-embed") and t not in before
        ]
        assert workers
    for thread in workers:
        thread.join(10)
        assert not thread.is_alive(), "closing the store stopped its worker"


def test_a_wait_goes_on_past_a_lock_timeout_of_its_store(clean: Database) -> None:
    """A wait whose store times out on a row another transaction holds tries again (a lock
    timeout there means someone else holds the row), and ends once the row is free, within its
    own timeout."""
    embedder = HashingEmbedder()
    with queued_store(clean, embedder, lock_timeout_ms=100) as store:
        memory = store.memory("tess", types=["episodic"])
        memory_id = memory.add_memory("the tide turns at noon", "episodic")
        outcome: list[object] = []

        def wait() -> None:
            try:
                outcome.append(memory.wait_for_embeddings(timeout=patience(120)))
            except Exception as exc:  # the failure this test looks for, reported below
                outcome.append(exc)

        with clean.transaction("tess") as holder:
            holder.execute(
                "SELECT 1 FROM memories WHERE user_id = 'tess' AND id = %s FOR UPDATE", (memory_id,)
            )
            waiter = threading.Thread(target=wait)
            waiter.start()
            starts: set[object] = set()
            with clean.connection() as watch:
                while len(starts) < 2 and waiter.is_alive():  # two blocked stores: one timed out
                    watch.execute("SELECT pg_stat_clear_snapshot()")
                    starts |= {
                        row[0]
                        for row in watch.execute(
                            "SELECT xact_start FROM pg_stat_activity"
                            " WHERE wait_event_type = 'Lock' AND query LIKE '%%FOR NO KEY UPDATE%%'"
                        )
                    }
                    watch.rollback()
        waiter.join(timeout=patience(120))
        assert outcome == [1], outcome
