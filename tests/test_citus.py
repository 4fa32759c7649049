"""The local Citus cluster (scripts/devdb citus): built from PGMEM_CITUS_SOURCE, a coordinator and
two workers. These tests check the ground hello_pgmem's Citus mode will stand on: per-user queries
route to one shard, and which way of setting the row-level security scope reaches the workers.
They run when PGMEM_CITUS_SOURCE names the source tarball (.ci/run sets it when the vendored
tarball is present)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from hello_pgmem import Database, HashingEmbedder, KnowledgeBase, MemoryManager, Settings, migrations
from hello_pgmem.dev.chroot import DevDB
from hello_pgmem.dev.citus import CitusCluster
from hello_pgmem.ops import grants
from hello_pgmem.ops.citus import distribute

pytestmark = pytest.mark.skipif(
    not os.environ.get("PGMEM_CITUS_SOURCE"), reason="PGMEM_CITUS_SOURCE names no Citus source tarball"
)


@pytest.fixture(scope="module")
def cluster(server_url: str) -> CitusCluster:
    cluster = CitusCluster(DevDB.from_env())
    cluster.up()
    return cluster


@pytest.fixture()
def database(cluster: CitusCluster) -> Iterator[str]:
    """A fresh database on every node, dropped afterwards."""
    name = f"citus_test_{uuid.uuid4().hex[:8]}"
    cluster.create_database(name)
    try:
        yield cluster.url(name)
    finally:
        cluster.drop_database(name)


def test_the_cluster_is_up_with_two_workers_and_up_is_idempotent(cluster: CitusCluster) -> None:
    assert cluster.up() == cluster.url()
    ok, text = cluster.status()
    assert ok, text
    with psycopg.connect(cluster.url()) as conn:
        nodes = conn.execute("SELECT nodeport FROM pg_dist_node ORDER BY nodeport").fetchall()
        assert [row[0] for row in nodes] == sorted(cluster.ports.values())
        assert (
            conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'citus'").fetchone() is not None
        )


def test_a_per_user_nearest_neighbour_query_routes_to_one_shard(database: str) -> None:
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE memories (user_id text, id int, embedding vector(3), PRIMARY KEY (user_id, id))"
        )
        conn.execute("SELECT create_distributed_table('memories', 'user_id')")
        conn.execute("CREATE INDEX ON memories USING hnsw (embedding vector_cosine_ops)")
        conn.execute(
            "INSERT INTO memories SELECT 'user' || (i % 20), i, ARRAY[i % 7 + 1, i % 5 + 1, 1]::vector"
            " FROM generate_series(1, 400) AS i"
        )
        plan = "\n".join(
            row[0]
            for row in conn.execute(
                "EXPLAIN SELECT id FROM memories WHERE user_id = 'user3'"
                " ORDER BY embedding <=> '[1,2,3]' LIMIT 5"
            ).fetchall()
        )
        found = conn.execute(
            "SELECT count(*) FROM (SELECT id FROM memories WHERE user_id = 'user3'"
            " ORDER BY embedding <=> '[1,2,3]' LIMIT 5) AS x"
        ).fetchone()
    assert "Task Count: 1" in plan, plan
    assert found == (5,)


def test_the_scope_reaches_the_workers_only_as_a_propagated_set_local(database: str) -> None:
    """set_config(..., true), what the library uses on one server, is not sent to the workers; a
    SET LOCAL with citus.propagate_set_commands = 'local' is. Citus mode must use the latter."""
    role = f"citus_app_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute("CREATE TABLE notes (user_id text, id int, body text, PRIMARY KEY (user_id, id))")
        conn.execute("SELECT create_distributed_table('notes', 'user_id')")
        conn.execute("INSERT INTO notes SELECT 'u' || (i % 4), i, 'x' FROM generate_series(1, 40) AS i")
        conn.execute("ALTER TABLE notes ENABLE ROW LEVEL SECURITY")
        conn.execute("CREATE POLICY own ON notes USING (user_id = current_setting('pgmem.user_id', true))")
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT SELECT ON notes TO {role}")
    try:
        with psycopg.connect(database, user=role) as conn:
            conn.execute("SELECT set_config('pgmem.user_id', 'u1', true)")
            assert conn.execute("SELECT count(*) FROM notes").fetchone() == (0,)
            conn.rollback()
            conn.execute("SET LOCAL citus.propagate_set_commands = 'local'")
            conn.execute("SET LOCAL pgmem.user_id = 'u1'")
            assert conn.execute("SELECT count(*) FROM notes").fetchone() == (10,)
            conn.rollback()
    finally:
        with psycopg.connect(database, autocommit=True) as conn:
            conn.execute("DROP TABLE notes")
            conn.execute(f"DROP ROLE {role}")


def test_the_schema_distributes_and_serves_each_user_from_one_shard(database: str) -> None:
    """Migrated without AGE, distributed by ``hello-pgmem citus distribute``: memories, the graph
    and RAG work through the API as the application role, each user sees only their rows (the
    scope reaches the workers), and a user's search is one task on one worker."""
    suffix = uuid.uuid4().hex[:6]
    owner, app, analytics = (f"citus_{kind}_{suffix}" for kind in ("owner", "app", "analytics"))
    superuser = Settings(database_url=database, age="off")
    with psycopg.connect(database) as conn:
        grants.apply(conn, grants.owner_statements(conn, superuser, owner, create=True))
    as_owner = Settings(database_url=make_conninfo(database, user=owner), age="off")
    migrations.upgrade(as_owner)
    placed = distribute(as_owner)
    assert placed["memories"] == placed["chunks"] == "distributed"
    assert placed["embedding_models"] == placed["access_tokens"] == "reference"
    assert distribute(as_owner) == placed  # idempotent
    with psycopg.connect(database) as conn:
        grants.apply(conn, grants.role_statements(conn, superuser, app, analytics, create=True))
    embedder = HashingEmbedder()
    with Database(Settings(database_url=make_conninfo(database, user=app), age="off")) as db:
        assert db.citus
        alice = MemoryManager(user_id="alice", database=db, embedder=embedder)
        alice.add_memories(["Alice adopted a cat named Biscuit", "Alice moved to Berlin"], "episodic")
        alice.add_memory("Alice works at Acme as an engineer", "semantic", 0.8)
        bob = MemoryManager(user_id="bob", database=db, embedder=embedder)
        bob.add_memory("Bob plays the trumpet", "episodic")
        for scoring in ("hybrid", "vector", "lexical"):
            found = alice.retrieve_memories("what is the name of Alice's cat?", limit=3, scoring=scoring)
            assert found[0].content == "Alice adopted a cat named Biscuit", scoring
        assert bob.retrieve_memories("cat Biscuit", limit=5, scoring="lexical") == []
        assert alice.get_memory_stats().total_memories == 3
        kb = KnowledgeBase(db, embedder, "handbook")
        kb.add_text("# Leave\n\nTwenty-five days a year.\n\n# Travel\n\nBook trains early.", "policy")
        assert kb.search("how many days of leave?", top_k=1)[0].heading_path == ["Leave"]
        with db.transaction("alice") as conn:
            assert conn.execute("SELECT count(*) FROM memories").fetchone() == (3,)
        with db.transaction() as conn:
            assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)
    with psycopg.connect(database, autocommit=True) as conn:
        model = conn.execute("SELECT model FROM pgmem.embedding_models").fetchone()
        assert model is not None
        plan = "\n".join(
            row[0]
            for row in conn.execute(
                "EXPLAIN SELECT pgmem.search_memories('alice', %s, %s::vector, 'cat', 3)",
                (model[0], str(embedder.encode_one("cat").tolist())),
            ).fetchall()
        )
    assert "Task Count: 1" in plan, plan
