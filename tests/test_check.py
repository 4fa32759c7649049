"""The integrity checker: silent on a store the library wrote, loud on each kind of damage."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from hello_pgmem import Database, HashingEmbedder, InvalidInputError, KnowledgeBase
from hello_pgmem.cli import main
from hello_pgmem.db.age import cypher
from hello_pgmem.memory import MemoryManager
from hello_pgmem.ops.check import check_integrity
from tests.conftest import Clock
from tests.deployments import ON_CITUS
from tests.test_ops import populate


def busy_store(make: Callable[..., MemoryManager], db: Database, clock: Clock) -> None:
    """Two users after adds (in sessions), updates, removals, forgetting, consolidation, and two
    namespaces."""
    for user in ("alice", "bob"):
        manager = populate(lambda name: make(name, session_id=f"{name}-chat"), user)
        manager.add_memory("短暂的念头", "working", 0.2)
        first = manager.retrieve_memories("Python", limit=1)[0]
        manager.update_memory(first.id, content="张三改用Rust做系统开发", importance=0.9)
        manager.forget_memories("importance_based", threshold=0.65)
        manager.consolidate_memories("working", "episodic", importance_threshold=0.5)
    alice = make("alice", session_id="alice-chat")
    alice.add_memory("另一个会话里的事", "episodic", 0.5, session_id="alice-later")
    alice.remove_memory(alice.retrieve_memories("产品经理", limit=1)[0].id)
    for namespace in ("a", "b"):
        KnowledgeBase(db, HashingEmbedder(), namespace).add_text("# T\n\n第一段。\n\n## U\n\n第二段。", "doc")
    clock.advance(hours=48)  # the working memories expire; they stay in the table until maintain


def test_a_store_written_by_the_library_has_no_violations(
    make_manager: Callable[..., MemoryManager], clean: Database, clock: Clock
) -> None:
    busy_store(make_manager, clean, clock)
    report = check_integrity(clean, HashingEmbedder().model_name)
    assert report.ok, report.text()
    assert "expired_working" in report.checks
    assert ("projection_relations" in report.checks) == clean.graph_enabled


DAMAGE = {
    # a vector lost with the triggers off (a restore): the memory is not queued for a new one
    "embeddings": "SET LOCAL session_replication_role = replica;"
    " UPDATE memories SET embedding = NULL, embedding_model = NULL"
    " WHERE id = (SELECT id FROM memories WHERE forgotten_at IS NULL LIMIT 1)",
    "chunk_embeddings": "SET LOCAL session_replication_role = replica;"
    " UPDATE chunks SET embedding = NULL, embedding_model = NULL WHERE id = (SELECT id FROM chunks LIMIT 1)",
    # a vector written by a hand that embedded an older text (as a worker racing an edit once did)
    "vector_texts": "UPDATE memories SET embedded_hash = vector_fingerprint('an older text')"
    " WHERE id = (SELECT id FROM memories WHERE forgotten_at IS NULL AND embedded_hash IS NOT NULL LIMIT 1)",
    "embedding_queue": "INSERT INTO memory_embedding_queue (user_id, memory_id)"
    " SELECT user_id, id FROM memories WHERE embedding IS NOT NULL LIMIT 1",
    "totals": "UPDATE memory_text_totals SET terms = terms + 3 WHERE user_id = 'alice'",
    "orphan_chunks": "SET LOCAL session_replication_role = replica; DELETE FROM documents WHERE namespace = 'a'",
    "chunk_counts": "UPDATE documents SET chunk_count = chunk_count + 1 WHERE namespace = 'b'",
    "term_counts": "DELETE FROM memory_term_counts WHERE user_id = 'alice'",
    # a window written with the triggers off: it no longer holds its neighbours' words
    "contexts": "SET LOCAL session_replication_role = replica;"
    " UPDATE memory_contexts SET lexemes = to_tsvector('simple', 'nothing'), length = 1"
    " WHERE memory_id = (SELECT memory_id FROM memory_contexts WHERE user_id = 'alice' LIMIT 1)",
    "orphan_entities": "DELETE FROM mentions WHERE entity_id = (SELECT id FROM entities LIMIT 1)",
    "orphan_mentions": "SET LOCAL session_replication_role = replica;"
    " DELETE FROM entities WHERE id = (SELECT entity_id FROM mentions LIMIT 1)",
}


if not ON_CITUS:  # a cluster keeps no sessions as documents
    DAMAGE |= {
        "sessions": "UPDATE memory_sessions SET memories = memories + 1"
        " WHERE session_id = (SELECT session_id FROM memory_sessions LIMIT 1)",
        "session_terms": "DELETE FROM session_terms WHERE lexeme = (SELECT lexeme FROM session_terms LIMIT 1)",
    }


@pytest.mark.parametrize("check", sorted(DAMAGE))
def test_each_kind_of_damage_is_reported(
    make_manager: Callable[..., MemoryManager], clean: Database, clock: Clock, check: str
) -> None:
    busy_store(make_manager, clean, clock)
    with clean.connection() as conn:
        if ON_CITUS:  # the damage is done on the workers: the setting must reach them
            conn.execute("SET LOCAL citus.propagate_set_commands = 'local'")
        for statement in DAMAGE[check].split(";"):
            conn.execute(statement)
    found = {v.check: v for v in check_integrity(clean).violations}
    assert check in found, found
    assert found[check].count >= 1 and found[check].sample


@pytest.mark.needs_age
def test_projection_drift_is_reported_and_repaired_by_a_rebuild(
    make_manager: Callable[..., MemoryManager], clean: Database, clock: Clock
) -> None:
    from hello_pgmem.ops.rebuild import rebuild_graph

    busy_store(make_manager, clean, clock)
    with clean.connection() as conn:
        cypher(conn, clean.settings.graph_name, "CREATE (:Entity {user_id: 'bob', id: 'x', name: 'ghost'})")
        cypher(
            conn, clean.settings.graph_name, "MATCH (:Memory)-[r:MENTIONS {user_id: 'alice'}]->() DELETE r"
        )
    found = {v.check: v for v in check_integrity(clean).violations}
    assert set(found) == {"projection_entities", "projection_mentions"}
    assert any(s.startswith("extra") and "ghost" in s for s in found["projection_entities"].sample)
    assert all(s.startswith("missing") for s in found["projection_mentions"].sample)
    rebuild_graph(clean)
    assert check_integrity(clean).ok


def test_check_command_exit_codes(
    make_manager: Callable[..., MemoryManager],
    clean: Database,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    busy_store(make_manager, clean, clock)
    monkeypatch.setenv("DATABASE_URL", clean.settings.database_url)
    assert main(["check", "--model", HashingEmbedder().model_name]) == 0
    assert "no violations" in capsys.readouterr().out
    clean.ensure_embedding_model("some-other-model", 8)  # registered, but no memory carries it
    assert main(["check", "--model", "some-other-model"]) == 1
    assert "VIOLATION embeddings" in capsys.readouterr().out
    assert main(["check", "--model", "never-registered"]) == 1
    assert "must be a registered embedding model" in capsys.readouterr().err


def test_an_unknown_model_is_named_not_blamed_on_every_memory(
    make_manager: Callable[..., MemoryManager], clean: Database, clock: Clock
) -> None:
    busy_store(make_manager, clean, clock)
    with pytest.raises(
        InvalidInputError, match=r"model: must be a registered embedding model \(.*hashing-v1-384"
    ):
        check_integrity(clean, "text-embedding-3-small")


RECOUNT = """
    SELECT coalesce(s.session_id, m.session_id), s.memories, s.terms, m.memories, m.terms,
           s.embedding_sum <-> m.summed
    FROM (SELECT * FROM memory_sessions WHERE user_id = %(user)s) s
    FULL JOIN (SELECT session_id, count(*) AS memories, sum(term_count) AS terms, sum(embedding) AS summed
               FROM memories WHERE user_id = %(user)s AND forgotten_at IS NULL AND session_id IS NOT NULL
               GROUP BY 1) m USING (session_id)
    ORDER BY 1"""
"""Each of a user's sessions as the triggers keep it beside a recount of its live memories: session,
memories and terms kept, memories and terms held, distance between the summed vectors."""


def sessions_match_their_memories(db: Database, user: str, tolerance: float = 1e-3) -> list[Any]:
    """The recount of ``user``'s sessions, asserted equal to what the triggers keep (the summed
    vectors within ``tolerance``)."""
    with db.transaction(user) as conn:
        rows = conn.execute(RECOUNT, {"user": user}).fetchall()
    assert all(r[1] == r[3] and r[2] == r[4] and r[5] is not None and r[5] < tolerance for r in rows), rows
    return rows


@pytest.mark.skipif(ON_CITUS, reason="a cluster keeps no sessions as documents")
def test_each_change_of_a_memory_moves_it_between_sessions(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    """Forgetting, restoring, a new text, a new session and a new vector each move the memory
    out of the session it was in and into the one it is in (the row trigger)."""
    manager = make_manager("mover")
    first = manager.add_memory("the garden needs water every morning", "episodic", session_id="a")
    manager.add_memory("tomatoes grow along the fence", "episodic", session_id="a")
    manager.add_memory("the bus leaves at seven", "episodic", session_id="b")
    model = manager.embedder.model_name
    assert [r[0] for r in sessions_match_their_memories(clean, "mover")] == ["a", "b"]
    changes = (
        "UPDATE memories SET forgotten_at = now() WHERE user_id = 'mover' AND id = %(id)s",
        "UPDATE memories SET forgotten_at = NULL WHERE user_id = 'mover' AND id = %(id)s",
        "UPDATE memories SET content = 'the orchard needs pruning in winter' WHERE user_id = 'mover' AND id = %(id)s",
        "UPDATE memories SET session_id = 'b' WHERE user_id = 'mover' AND id = %(id)s",
        # the new text above lost its vector (and waits for one): a vector of the model again
        "UPDATE memories SET (embedding, embedding_model) = (SELECT embedding, embedding_model FROM memories"
        " WHERE user_id = 'mover' AND session_id = 'b' AND id <> %(id)s LIMIT 1)"
        " WHERE user_id = 'mover' AND id = %(id)s",
    )
    for change in changes:
        with clean.transaction("mover", embedding_model=model) as conn:  # a text queued for this model
            conn.execute(change, {"id": first})
        sessions_match_their_memories(clean, "mover")
        assert check_integrity(clean, model).ok, change
    held = sessions_match_their_memories(clean, "mover")
    assert [(r[0], r[1]) for r in held] == [("a", 1), ("b", 2)]


@pytest.mark.skipif(ON_CITUS, reason="a cluster keeps no sessions as documents")
def test_a_statement_of_thousands_of_rows_keeps_every_session_right(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    """One INSERT of 2,500 memories over three new sessions (as a bulk load writes them), and one
    DELETE of them: each session's count, terms and summed vector are those of its rows."""
    manager = make_manager("bulk")
    manager.add_memory("the first memory of the user", "episodic", session_id="s0")
    model = manager.embedder.model_name
    with clean.transaction("bulk") as conn:
        conn.execute(
            """INSERT INTO memories (user_id, id, memory_type, content, importance, session_id, created_at,
                                     embedding, embedding_model)
               SELECT 'bulk', gen_random_uuid(), 'episodic', 'turn ' || g || ' about the garden', 0.5,
                      's' || (g %% 3), now() - g * interval '1 minute', m.embedding, m.embedding_model
               FROM generate_series(1, 2500) AS g, memories m
               WHERE m.user_id = 'bulk' AND m.embedding_model = %s""",
            (model,),
        )
    rows = sessions_match_their_memories(clean, "bulk", tolerance=1e-2)
    assert [r[0] for r in rows] == ["s0", "s1", "s2"]
    assert sum(r[1] for r in rows) == 2501
    assert check_integrity(clean, model).ok
    with clean.transaction("bulk") as conn:
        conn.execute("DELETE FROM memories WHERE user_id = 'bulk'")
    with clean.transaction("bulk") as conn:
        left = conn.execute("SELECT count(*) FROM memory_sessions WHERE user_id = 'bulk'").fetchone()
        terms = conn.execute("SELECT count(*) FROM session_terms WHERE user_id = 'bulk'").fetchone()
    assert left == (0,) and terms == (0,)
