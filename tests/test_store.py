"""hello_pgmem.connect(): the one way in, and the public names of the package."""

from __future__ import annotations

import pytest

import hello_pgmem
from hello_pgmem import ConfigurationError, Database, HashingEmbedder, InvalidInputError
from tests.conftest import wipe


def test_every_public_name_resolves() -> None:
    for name in hello_pgmem.__all__:
        assert getattr(hello_pgmem, name) is not None, name
    assert InvalidInputError is InvalidInputError
    for name in ("AgentMemorySystem", "SimpleAgent", "ChunkHit", "IngestResult", "connect", "Store"):
        assert name in hello_pgmem.__all__
    with pytest.raises(AttributeError):
        hello_pgmem.NoSuchThing  # noqa: B018


def test_connect_shares_one_pool_among_users_and_namespaces(database: Database) -> None:
    with hello_pgmem.connect(database.settings.database_url, embedder=HashingEmbedder()) as store:
        try:
            alice, bob = store.memory("alice"), store.memory("bob", types=["episodic"])
            assert alice.db is bob.db is store.db and alice.embedder is store.embedder
            assert bob.enabled_types == ["episodic"]
            alice.add_memory("Alice moved to Berlin", "episodic", 0.7)
            assert [m.content for m in alice.retrieve_memories("Berlin")] == ["Alice moved to Berlin"]
            assert bob.retrieve_memories("Berlin") == []
            docs = store.knowledge("handbook")
            docs.add_text("# Leave\n\nTwenty-five days a year.", "leave")
            assert docs.search("days of leave", top_k=1)[0].document_id == "leave"
            assert "Berlin" in store.memory_tool("alice").run("search", query="Berlin")
            assert "Namespace: handbook" in store.rag_tool("handbook").run("stats")
            assert "must be one of" in store.rag_tool("handbook").run("stats", namespace="other")
            with pytest.raises(ConfigurationError, match="LLM_MODEL_ID"):
                store.loop()
        finally:
            wipe(database)
    assert store.db._pool is None, "the store closed the pool it opened"


def test_a_store_on_a_given_database_leaves_it_open(database: Database) -> None:
    with hello_pgmem.Store(database=database, embedder=HashingEmbedder()) as store:
        assert store.db is database
    with database.connection() as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_everything_made_without_a_database_shares_the_processs_one_pool(database: Database) -> None:
    settings = database.settings
    one = hello_pgmem.MemoryManager(user_id="alice", settings=settings, embedder=HashingEmbedder())
    two = hello_pgmem.MemoryManager(user_id="bob", settings=settings, embedder=HashingEmbedder())
    store = hello_pgmem.connect(settings=settings, embedder=HashingEmbedder())
    try:
        assert one.db is two.db is store.db, "one pool per process for the same settings"
        assert one.retrieve_memories("anything") == []
        one.close()
        one.close()  # a second close gives back nothing more
        assert two.db._pool is not None, "the others' share keeps it open"
        assert two.retrieve_memories("anything") == []
        two.close()
        assert store.db._pool is not None
    finally:
        store.close()
    assert store.db._pool is None, "the last share closes the pool"
    other = hello_pgmem.MemoryManager(user_id="carol", settings=settings, embedder=HashingEmbedder())
    assert other.db is not one.db, "a new share after the last made a new Database"
    other.close()
