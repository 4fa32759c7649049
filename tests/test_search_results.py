"""What a search returns and says it sends: typed results (score, components, session, modality
as fields), the SQL a search shows, and the tool and MCP box built through the store."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

import hello_pgmem
from hello_pgmem import Database, HashingEmbedder, InvalidInputError, MemoryManager, MemorySearch
from tests.conftest import wipe


def test_a_result_carries_its_score_components_session_and_modality_as_fields(
    make_manager: Callable[..., MemoryManager],
) -> None:
    manager = make_manager(session_id="chat-7")
    manager.add_memory("Alice moved to Berlin in 2021", "episodic", 0.6)
    manager.add_memory("Alice plays the cello", "episodic", 0.6, session_id="named")
    [hit, other] = manager.retrieve_memories("Where did Alice move to?", memory_types=["episodic"], limit=2)
    assert hit.content.startswith("Alice moved") and hit.session_id == "chat-7"
    assert other.session_id == "named", "a session given to the add wins"
    assert hit.score is not None and hit.score > other.score  # type: ignore[operator]
    assert {"vector_score", "text_score", "graph_score", "time_score", "importance_weight"} <= set(
        hit.components
    )
    assert hit.components["text_score"] > 0 and hit.modality is None
    assert "session_id" not in hit.metadata and "relevance_score" not in hit.metadata
    stored = manager.get_memory(hit.id)
    assert stored is not None and stored.score is None and stored.components == {}
    assert stored.session_id == "chat-7"


def test_working_memory_results_are_typed_the_same_way(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager(session_id="s")
    manager.add_memory("the kettle is in the left cupboard", "working", 0.5)
    [hit] = manager.retrieve_memories("kettle", memory_types=["working"])
    assert hit.memory_type == "working" and hit.session_id == "s" and hit.score is not None
    assert set(hit.components) == {"tfidf_score", "keyword_score", "time_decay", "importance_weight"}


def test_the_sql_a_search_shows_returns_what_the_search_returns(
    make_manager: Callable[..., MemoryManager],
) -> None:
    manager = make_manager(enable_working=False)
    manager.add_memories(
        ["Alice moved to Berlin in 2021", "Bob works at Acme", "Alice's cello lessons start in May"],
        "episodic",
        timestamps=[
            datetime(2021, 3, 1, tzinfo=UTC),
            datetime(2022, 1, 1, tzinfo=UTC),
            datetime(2023, 5, 1, tzinfo=UTC),
        ],
    )
    question = "Where did Alice live in 2021?"
    found = manager.retrieve_memories(question, limit=3, track_access=False)
    shown = manager.search_sql(MemorySearch(question, limit=3))
    assert "search_memories" in shown.text and shown.params["time_from"] is not None
    with manager.db.transaction(manager.user_id) as conn:
        rows = conn.execute(shown.text, shown.params).fetchall()
        literal = shown.literal(conn)
    with psycopg.connect(manager.db.settings.database_url, autocommit=True) as fresh:  # as psql would
        cursor = fresh.execute(literal.encode())
        pasted: list[tuple[Any, ...]] = []
        while True:
            if cursor.description is not None and len(cursor.description) > 5:
                pasted = cursor.fetchall()
            if not cursor.nextset():
                break
    expected = [(item.id, pytest.approx(item.score)) for item in found]
    assert [(row[0], row[-1]) for row in rows] == expected
    assert [(row[0], row[-1]) for row in pasted] == expected, "the literal runs as it is shown"
    lean = manager.search_sql(MemorySearch(question, limit=3, scoring="vector"))
    assert lean.before and "search_memories" in lean.text  # its exact fallback calls the function


def test_only_a_long_term_search_has_sql_to_show(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager()
    with pytest.raises(InvalidInputError, match="memory_types"):
        manager.search_sql(MemorySearch("kettle", ["working"]))


def test_the_store_builds_tools_and_mcp_boxes_on_its_one_pool(database: Database) -> None:
    from hello_pgmem.access import Identity
    from hello_pgmem.mcp_server.identity_tools import IdentityTools

    with hello_pgmem.Store(database=database, embedder=HashingEmbedder()) as store:
        try:
            tool = store.memory_tool("alice", session_id="s-1")
            assert tool.memory_manager.db is store.db and tool.memory_manager.embedder is store.embedder
            assert tool.current_session_id == tool.memory_manager.session_id == "s-1"
            box = IdentityTools(store, Identity("bob", ()))
            assert box.memory.memory_manager.user_id == "bob" and box.memory.memory_manager.db is store.db
            assert box.rag.namespaces == frozenset({"user:bob"}) and box.rag.user_id == "bob"
        finally:
            wipe(database)


def test_sessions_come_back_whole_best_first(make_manager: Callable[..., MemoryManager]) -> None:
    manager = make_manager(enable_working=False)
    day = datetime(2024, 3, 1, tzinfo=UTC)
    kitchen = ["We talked about the new kitchen", "The kitchen tiles should be blue", "Budget is tight"]
    garden = ["The garden needs a fence", "A kitchen garden for herbs", "Tomatoes by the fence"]
    manager.add_memories(kitchen, session_ids=["s-kitchen"] * 3, timestamps=[day] * 3)
    manager.add_memories(garden, session_ids=["s-garden"] * 3, timestamps=[day] * 3)
    manager.add_memories(["unrelated and alone"], session_ids=["s-other"])
    found = manager.retrieve_sessions("which tiles for the kitchen?", limit=2)
    assert [s.session_id for s in found] == ["s-kitchen", "s-garden"]
    first = found[0]
    assert [m.content for m in first.memories] == kitchen, "the whole session, in the order it was written"
    assert first.hits[0].content == "The kitchen tiles should be blue", "its hits, best first"
    assert all(h.session_id == "s-kitchen" for h in first.hits)
    assert found[0].score >= found[1].score
    assert [
        m.content for m in manager.retrieve_sessions("kitchen", limit=1, max_memories=2)[0].memories
    ] == kitchen[:2]
    for bad, field in (
        ({"limit": 0}, "limit"),
        ({"max_memories": 0}, "max_memories"),
        ({"candidates": 5000}, "candidates"),
    ):
        with pytest.raises(InvalidInputError) as caught:
            manager.retrieve_sessions("kitchen", **bad)  # type: ignore[arg-type]
        assert caught.value.field == field
