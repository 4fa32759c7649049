"""The full-text layer: a configuration per text, lexemes kept by a trigger,
BM25 totals kept by statement triggers, existing rows backfilled by the migration."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from hello_pgmem import Database, HashingEmbedder, KnowledgeBase, MemoryManager
from hello_pgmem.ops.check import TERM_COUNTS


def scalar(db: Database, query: str, *params: object) -> object:
    with db.connection() as conn:
        row = conn.execute(query, params).fetchone()
    return row[0] if row else None


@pytest.mark.parametrize(
    ("text", "config"),
    [
        ("Caroline went running with her dogs", "english"),
        ("用户张三是一名Python开发者", "simple"),
        ("東京で寿司を食べました", "simple"),
        ("Le café était très bon, merci beaucoup à vous", "simple"),
        ("I'd love a café au lait, the one from the corner shop", "english"),
    ],
)
def test_each_text_gets_the_configuration_of_its_language(database: Database, text: str, config: str) -> None:
    assert scalar(database, "SELECT text_config_for(%s)::text", text) == config


def query_terms(db: Database, query: str) -> set[str]:
    terms = scalar(db, "SELECT query_terms(%s)", query)
    assert isinstance(terms, list)
    return {str(term) for term in terms}


def test_query_terms_are_stems_words_and_character_pairs(database: Database) -> None:
    terms = query_terms(database, "Who was running the Python meetups?")
    assert {"run", "running", "python", "meetup", "meetups"} <= terms
    assert not {"who", "was", "the"} & terms
    assert {"张三", "前端", "工程", "程师"} <= query_terms(database, "张三是前端工程师吗？")
    assert scalar(database, "SELECT terms_query(query_terms(%s))", "the, of and") is None


def totals_agree(db: Database) -> bool:
    """The trigger-kept totals and term counts equal a count over the live rows, for every user and
    namespace (a term no live memory holds has no row)."""
    with db.connection() as conn:
        if conn.execute(TERM_COUNTS).fetchall():  # the integrity check's: the counts that differ
            return False
        memories = conn.execute(
            "SELECT coalesce(t.user_id, m.user_id), t.memories, t.terms, m.memories, m.terms"
            " FROM memory_text_totals t FULL JOIN (SELECT user_id, count(*) AS memories,"
            " sum(term_count) AS terms FROM memories WHERE forgotten_at IS NULL GROUP BY 1) m USING (user_id)"
        ).fetchall()
        chunks = conn.execute(
            "SELECT coalesce(t.namespace, c.namespace), t.chunks, t.terms, c.chunks, c.terms"
            " FROM chunk_text_totals t FULL JOIN (SELECT namespace, count(*) AS chunks,"
            " sum(term_count) AS terms FROM chunks GROUP BY 1) c USING (namespace)"
        ).fetchall()
    return all((r[1] or 0, r[2] or 0) == (r[3] or 0, r[4] or 0) for r in [*memories, *chunks])


def test_lexemes_and_totals_follow_every_change(
    make_manager: Callable[..., MemoryManager], clean: Database, embedder: HashingEmbedder
) -> None:
    alice, bob = make_manager("alice"), make_manager("bob")
    ids = alice.add_memories(["I love hiking in the Alps", "My cat is called Miso"], "episodic")
    bob.add_memory("Bob plays the bass guitar", "semantic")
    assert totals_agree(clean)
    alice.update_memory(ids[0], content="I love climbing mountains in Switzerland every summer")
    assert alice.retrieve_memories("climbing Switzerland", limit=1)[0].id == ids[0]
    assert not alice.retrieve_memories("hiking Alps", scoring="lexical")
    alice.remove_memory(ids[1])
    assert totals_agree(clean)
    kb = KnowledgeBase(clean, embedder, "docs")
    kb.add_text("# Guide\n\nInstall the package, then run the migrations.", "guide")
    kb.add_text("# Other\n\nNothing to see.", "other")
    kb.remove_document("other")
    assert totals_agree(clean)
    hit = kb.search("installing packages", 1)[0]  # English stems: installing -> install
    assert hit.document_id == "guide" and hit.text_score == 1.0
    bob.clear_all()
    assert totals_agree(clean)
    assert scalar(clean, "SELECT memories FROM memory_text_totals WHERE user_id = 'bob'") == 0
    assert scalar(clean, "SELECT count(*) FROM memory_term_counts WHERE user_id = 'bob'") == 0
    with clean.connection() as conn:  # a DBA's TRUNCATE empties the totals too
        conn.execute("TRUNCATE memories, chunks CASCADE")
    assert scalar(clean, "SELECT count(*) FROM memory_text_totals") == 0
    assert scalar(clean, "SELECT count(*) FROM memory_term_counts") == 0
    assert scalar(clean, "SELECT count(*) FROM memory_contexts") == 0
    assert scalar(clean, "SELECT count(*) FROM chunk_text_totals") == 0


LEXICAL_INDEXES = {
    "memories_user_lexemes": ["fastupdate=on", "gin_pending_list_limit=64"],
    "chunks_namespace_lexemes": ["fastupdate=on", "gin_pending_list_limit=64"],
}


@pytest.fixture
def pending_list(clean: Database) -> Iterator[Callable[[], tuple[int, int]]]:
    """The pages and index tuples waiting in the memories' lexical index's pending list
    (pgstattuple, in a schema of its own for the test)."""
    with clean.connection() as conn:
        conn.execute("CREATE SCHEMA gin_inspection")
        conn.execute("CREATE EXTENSION pgstattuple SCHEMA gin_inspection")

    def read() -> tuple[int, int]:
        with clean.connection() as conn:
            row = conn.execute(
                "SELECT pending_pages, pending_tuples"
                " FROM gin_inspection.pgstatginindex('memories_user_lexemes'::regclass)"
            ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])

    yield read
    with clean.connection() as conn:
        conn.execute("DROP SCHEMA gin_inspection CASCADE")


def test_lexical_indexes_take_new_rows_into_a_small_pending_list(clean: Database) -> None:
    """GIN's fast update with a pending list of at most 64 kB, which every search reads in full."""
    with clean.connection() as conn:
        options = dict(
            conn.execute(
                "SELECT c.relname, c.reloptions FROM pg_class c WHERE c.relname = ANY (%s)",
                (list(LEXICAL_INDEXES),),
            ).fetchall()
        )
    assert options == LEXICAL_INDEXES


@pytest.mark.one_server  # on Citus the lists are the shards', on the workers
def test_lexical_indexes_merge_a_statements_new_rows_when_it_ends(
    make_manager: Callable[..., MemoryManager], pending_list: Callable[[], tuple[int, int]]
) -> None:
    """A statement's new rows wait in the pending list, merged into the index in bulk when the
    statement ends; a single row's entries stay in the list, where the search finds them."""
    manager = make_manager()
    for start in range(0, 300, 100):
        manager.add_memories(
            [
                f"Trip {n}: the ferry from port {n} to island {n * 7} left at dawn"
                for n in range(start, start + 100)
            ],
            "episodic",
        )
        assert pending_list() == (0, 0)
    manager.add_memory("The ferries to Naxos were cancelled", "episodic")
    assert pending_list()[1] > 0  # its lexemes wait in the list
    found = manager.retrieve_memories("ferry to Naxos", scoring="lexical", limit=1)
    assert [m.content for m in found] == ["The ferries to Naxos were cancelled"]


def test_a_memory_keeps_its_vector_in_its_row(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    """A chat turn of a few hundred characters with its 384-d vector and lexemes is over the 2 kB
    at which PostgreSQL moves a row's largest value (the vector) to TOAST by default; every search
    would read it back from there."""
    manager = make_manager()
    turn = "Alice: " + ", ".join(f"then stop {n} of the trip we planned" for n in range(20))
    [memory_id] = manager.add_memories([turn], "episodic")
    with clean.connection() as conn:
        row = conn.execute(
            "SELECT pg_column_toast_chunk_id(embedding), pg_column_toast_chunk_id(lexemes),"
            " pg_column_toast_chunk_id(content), pg_column_size(m.*) FROM memories m WHERE id = %s",
            (memory_id,),
        ).fetchone()
    assert row is not None
    assert row[3] > 2100  # long enough that the default target would have moved something out
    assert row[:3] == (None, None, None)


def test_a_chunk_keeps_its_vector_in_its_row(clean: Database, embedder: HashingEmbedder) -> None:
    """A RAG chunk with its 384-d vector and lexemes is over the 2 kB at which PostgreSQL moves a
    row's largest value to TOAST by default; every search would read it back from there."""
    kb = KnowledgeBase(clean, embedder, "docs")
    text = "# Trip\n\n" + " ".join(f"Stop {n} of the trip we planned along the coast." for n in range(40))
    kb.add_text(text, "trip.md", chunk_size=2000, chunk_overlap=0)
    with clean.transaction(namespace="docs") as conn:
        rows = conn.execute(
            "SELECT pg_column_toast_chunk_id(embedding), pg_column_toast_chunk_id(lexemes),"
            " pg_column_toast_chunk_id(content), pg_column_size(c.*) FROM chunks c"
        ).fetchall()
    assert rows and max(row[3] for row in rows) > 2100  # the default target would have moved something
    assert {row[:3] for row in rows} == {(None, None, None)}


def test_term_counts_follow_forgetting_and_edits(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    """Forgetting uncounts a memory's terms, an edit moves them, and access tracking (an update of
    other columns) leaves them alone; the hybrid search reads its frequencies there."""
    alice = make_manager("alice")
    kept = alice.add_memories([f"Harbour walk number {i} with the dog" for i in range(6)], "episodic")
    low = alice.add_memory("The violin lesson moved to Thursday", "episodic", importance=0.05)
    count = "SELECT memories FROM memory_term_counts WHERE user_id = 'alice' AND lexeme = %s"
    assert (scalar(clean, count, "harbour"), scalar(clean, count, "violin")) == (6, 1)
    assert alice.forget_memories("importance_based", threshold=0.1) == 1
    assert scalar(clean, count, "violin") is None and totals_agree(clean)
    alice.update_memory(kept[0], content="A violin concert by the harbour")
    assert (scalar(clean, count, "harbour"), scalar(clean, count, "violin"), scalar(clean, count, "dog")) == (
        6,
        1,
        5,
    )
    assert alice.retrieve_memories("violin concert", limit=1)[0].id == kept[0]
    with clean.transaction(all_rows=True) as conn:
        conn.execute("UPDATE memories SET access_count = access_count + 1, importance = 0.9")
        conn.execute("UPDATE memories SET forgotten_at = NULL WHERE id = %s", (low,))  # a DBA's undo
    assert scalar(clean, count, "violin") == 2 and totals_agree(clean)


def test_writers_of_one_user_in_either_order_do_not_deadlock(clean: Database) -> None:
    """Two transactions of one user over the same terms, one adding then forgetting its memories,
    the other forgetting then adding: each change of the user's counts first locks the user's
    totals row, so they queue instead of deadlocking (a forget used to lock count rows the other
    held, and wait for its totals row), and the counts stay exact."""
    words = [f"w{i}" for i in range(40)]
    insert = (
        "INSERT INTO memories (user_id, id, memory_type, content, session_id)"
        " SELECT 'carol', gen_random_uuid(), 'episodic', t, %s FROM unnest(%s::text[]) AS t"
    )
    forget = (
        "UPDATE memories SET forgotten_at = now() WHERE user_id = 'carol' AND session_id = %s AND id IN"
        " (SELECT id FROM memories WHERE user_id = 'carol' AND session_id = %s AND forgotten_at IS NULL"
        "  ORDER BY random() LIMIT 5)"
    )
    with clean.transaction("carol") as conn:
        for writer_session in ("a", "b"):
            conn.execute(insert, (writer_session, [" ".join(words[i : i + 8]) for i in range(30)]))
    barrier = threading.Barrier(2)

    def writer(session: str, add_first: bool, rounds: int = 15) -> None:
        for r in range(rounds):
            texts = [" ".join(reversed(words[(r + i) % 30 : (r + i) % 30 + 8])) for i in range(4)]
            steps = [(insert, (session, texts)), (forget, (session, session))]
            with clean.transaction("carol") as conn:
                for statement, params in steps if add_first else reversed(steps):
                    conn.execute(statement, params)
                    if r == 0:  # let the other take its first statement's locks (or queue)
                        with contextlib.suppress(threading.BrokenBarrierError):
                            barrier.wait(timeout=2)

    with ThreadPoolExecutor(max_workers=2) as threads:
        for future in [threads.submit(writer, "a", True), threads.submit(writer, "b", False)]:
            future.result(timeout=120)
    assert totals_agree(clean)
    assert scalar(clean, "SELECT count(*) FROM memories WHERE user_id = 'carol'") == 2 * 30 + 2 * 15 * 4
