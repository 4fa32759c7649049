"""A Citus cluster the user already runs, named by ``PGMEM_CITUS_URL`` (a coordinator's URL, such
as the ``citus`` profile of docker-compose.yml): the Citus suite makes its databases there instead
of on the development root's local cluster.

Citus does not create databases on its workers, so each database is made on the coordinator and on
every active primary worker its ``pg_dist_node`` lists (reached at the name and port listed there,
with the URL's user and password), with the citus extension in each; the workers are then joined
to the new database's coordinator, and pgvector made there (Citus creates it on the workers). A
coordinator with no workers is a single-node cluster that holds the shards itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from hello_pgmem.core.errors import ConfigurationError
from hello_pgmem.core.settings import IDENTIFIER

ENV = "PGMEM_CITUS_URL"
WORKERS = """
SELECT nodename, nodeport FROM pg_dist_node
WHERE groupid <> 0 AND noderole = 'primary' AND isactive
ORDER BY nodeid
"""
COORDINATOR = "SELECT nodename, nodeport FROM pg_dist_node WHERE groupid = 0"


def configured() -> str | None:
    """The coordinator's URL from ``PGMEM_CITUS_URL``, or None."""
    return os.environ.get(ENV) or None


@dataclass(frozen=True)
class ExternalCitus:
    """The databases of the Citus suite on a cluster named by its coordinator's URL."""

    coordinator_url: str

    def url(self, dbname: str | None = None) -> str:
        return make_conninfo(self.coordinator_url, dbname=dbname) if dbname else self.coordinator_url

    def _nodes(self) -> tuple[tuple[str, int] | None, list[tuple[str, int]]]:
        """The coordinator as the workers know it (None when not registered) and the workers."""
        try:
            with psycopg.connect(self.coordinator_url, autocommit=True, connect_timeout=10) as conn:
                if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'").fetchone() is None:
                    raise ConfigurationError(
                        f"{ENV} names a database without the citus extension: make it a coordinator "
                        "(CREATE EXTENSION citus) or name one that is (docs/citus.md)"
                    )
                coordinator = conn.execute(COORDINATOR).fetchone()
                workers = [(str(name), int(port)) for name, port in conn.execute(WORKERS).fetchall()]
        except psycopg.OperationalError as exc:
            raise ConfigurationError(f"{ENV}: cannot connect to the coordinator: {exc}") from exc
        return (None if coordinator is None else (str(coordinator[0]), int(coordinator[1]))), workers

    def _node_url(self, node: tuple[str, int] | None, dbname: str) -> str:
        if node is None:
            return make_conninfo(self.coordinator_url, dbname=dbname)
        return make_conninfo(self.coordinator_url, host=node[0], port=str(node[1]), dbname=dbname)

    def create_database(self, dbname: str) -> None:
        """``dbname`` with citus on every node, its workers joined and pgvector made; idempotent."""
        _check_name(dbname)
        coordinator, workers = self._nodes()
        for node in [None, *workers]:
            with psycopg.connect(self._node_url(node, "postgres"), autocommit=True) as conn:
                if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone() is None:
                    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
            with psycopg.connect(self._node_url(node, dbname), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS citus")
        with psycopg.connect(self._node_url(None, dbname), autocommit=True) as conn:
            joined = {
                (str(n), int(p)) for n, p in conn.execute("SELECT nodename, nodeport FROM pg_dist_node")
            }
            if workers and coordinator is not None and coordinator not in joined:
                conn.execute("SELECT citus_set_coordinator_host(%s, %s)", coordinator)
            for name, port in workers:
                if (name, port) not in joined:
                    conn.execute("SELECT citus_add_node(%s, %s)", (name, port))
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def drop_database(self, dbname: str) -> None:
        """Drop ``dbname`` from the coordinator, then from every worker."""
        _check_name(dbname)
        _, workers = self._nodes()
        for node in [None, *workers]:
            with psycopg.connect(self._node_url(node, "postgres"), autocommit=True) as conn:
                conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname))
                )

    @property
    def admin_url(self) -> str:
        """The coordinator's maintenance database."""
        return make_conninfo(self.coordinator_url, dbname="postgres")


def _check_name(dbname: str) -> None:
    if not IDENTIFIER.match(dbname):
        raise ConfigurationError(f"database name must match ^[A-Za-z_][A-Za-z0-9_]*$, got {dbname!r}")
