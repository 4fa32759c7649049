"""The local Citus cluster (scripts/devdb citus): a coordinator and two workers from the Citus
installed in the development root. These tests check the ground hello_pgmem's Citus mode stands
on: per-user queries route to one shard, and which way of setting the row-level security scope
reaches the workers. They run where a Citus is installed and are skipped otherwise (a fresh
machine has none: the project never builds one; docs/citus.md)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from hello_pgmem import Database, HashingEmbedder, KnowledgeBase, MemoryManager, Settings
from hello_pgmem.db import values_statements
from hello_pgmem.dev.chroot import DevDB
from hello_pgmem.dev.citus import NODES, CitusCluster, installed
from hello_pgmem.memory import _queries as q
from hello_pgmem.ops import grants, migrate
from hello_pgmem.ops.citus import distribute
from hello_pgmem.ops.doctor import diagnose

pytestmark = pytest.mark.skipif(
    not installed(DevDB.from_env()),
    reason="no Citus is installed in the development root (docs/citus.md); these tests start its local "
    "cluster (the rest of the Citus suite also runs on PGMEM_CITUS_URL's)",
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
        assert [row[0] for row in nodes] == sorted(cluster.ports[name] for name in NODES)
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
    migrate.upgrade(as_owner)
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
            # delegated to bob's worker, the search still runs under alice's scope: nothing
            asked = "SELECT search_memories('bob', %s, %s, 'trumpet', 5)"
            assert (
                conn.execute(asked, (embedder.model_name, embedder.encode_query("trumpet"))).fetchall() == []
            )
        with db.transaction("bob") as conn:
            assert (
                len(conn.execute(asked, (embedder.model_name, embedder.encode_query("trumpet"))).fetchall())
                == 1
            )
        with db.transaction() as conn:
            assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)
    with psycopg.connect(database, autocommit=True) as conn:
        model = conn.execute("SELECT model FROM pgmem.embedding_models").fetchone()
        assert model is not None
        plan = "\n".join(
            row[0]
            for row in conn.execute(
                "EXPLAIN SELECT pgmem.search_memories('alice', %s, %s::vector, 'cat', 3)",
                (model[0], str(embedder.encode_query("cat").tolist())),
            ).fetchall()
        )
    assert "Task Count: 1" in plan, plan
    rows = [{"memory_id": uuid.uuid4()}, {"memory_id": uuid.uuid4()}]  # a user's batch write: one shard
    statement, params = next(values_statements(q.LOG_ONE_ACCESS, rows, {"user_id": "alice", "now": "now"}))
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute("SET search_path = pgmem")
        added = "\n".join(row[0] for row in conn.execute("EXPLAIN " + statement, params).fetchall())
    assert "Task Count: 1" in added, added


def test_doctor_checks_the_nodes_the_placement_and_every_shards_security(database: str) -> None:
    superuser = Settings(database_url=database)  # AGE auto: not used on a coordinator
    migrate.upgrade(superuser, distribute=False)
    citus_findings = [f for f in diagnose(superuser) if f.check == "citus"]
    assert [f.level for f in citus_findings] == ["ok", "error"], citus_findings
    assert "not distributed" in citus_findings[1].message
    distribute(superuser)
    findings = diagnose(superuser)
    assert not [f for f in findings if f.level == "error"], findings
    assert [f.level for f in findings if f.check == "citus"] == ["ok", "ok", "ok"]
    with psycopg.connect(database, autocommit=True) as conn:
        shard = conn.execute(
            "SELECT shard_name(logicalrelid, shardid), nodeport FROM pg_dist_shard JOIN pg_dist_placement"
            " USING (shardid) JOIN pg_dist_node USING (groupid)"
            " WHERE logicalrelid = 'pgmem.memories'::regclass ORDER BY shardid LIMIT 1"
        ).fetchone()
    assert shard is not None
    with psycopg.connect(make_conninfo(database, port=shard[1]), autocommit=True) as worker:
        worker.execute(f"ALTER TABLE {shard[0]} NO FORCE ROW LEVEL SECURITY")  # behind Citus' back
    broken = [f for f in diagnose(superuser) if f.level == "error"]
    assert len(broken) == 1 and "memories (1 of 32 shards)" in broken[0].message, broken


def test_a_third_worker_takes_shards_when_rebalanced_and_answers_stay_the_same(
    cluster: CitusCluster, database: str
) -> None:
    """docs/citus.md, 'Adding a worker': citus_add_node, then citus_rebalance_start; the users'
    memories move to the new worker and every search answers as before."""
    settings = Settings(database_url=database, age="off")
    migrate.upgrade(settings)
    distribute(settings)
    embedder = HashingEmbedder()
    users = [f"user{i}" for i in range(12)]
    with Database(settings) as db:
        for user in users:
            MemoryManager(user_id=user, database=db, embedder=embedder).add_memories(
                [f"{user} keeps a notebook about topic {k}" for k in range(5)], "episodic"
            )

        def answers() -> dict[str, list[str]]:
            return {
                user: [
                    m.content
                    for m in MemoryManager(user_id=user, database=db, embedder=embedder).retrieve_memories(
                        "notebook topic 3", limit=3
                    )
                ]
                for user in users
            }

        before = answers()
        port = cluster.add_worker(str(conninfo_to_dict(database)["dbname"]))
        with psycopg.connect(database, autocommit=True) as conn:
            conn.execute("SELECT citus_rebalance_start(shard_transfer_mode => 'block_writes')")
            conn.execute("SELECT citus_rebalance_wait()")
            moved = conn.execute(
                "SELECT count(*) FROM citus_shards WHERE table_name = 'pgmem.memories'::regclass AND nodeport = %s",
                (port,),
            ).fetchone()
        assert moved is not None and moved[0] > 0, "the new worker holds shards of memories"
        assert answers() == before
        with db.transaction() as conn:
            assert conn.execute("SELECT count(*) FROM memories").fetchone() == (len(users) * 5,)
