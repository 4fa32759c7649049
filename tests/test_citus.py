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

from hello_pgmem.dev.chroot import DevDB
from hello_pgmem.dev.citus import CitusCluster

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
