"""Where the test suite runs: one PostgreSQL server (the default), or the local Citus cluster.

``PGMEM_TEST_DEPLOYMENT=citus`` runs the same tests on a coordinator with two workers
(``scripts/devdb citus``, from the Citus installed in the development root), or on the cluster
whose coordinator ``PGMEM_CITUS_URL`` names (``hello_pgmem.dev.citus_url``): every database a test
asks for is made on each node and migrated, which distributes it there (``hello_pgmem.ops.citus``).
Tests of Apache AGE itself carry the ``needs_age`` mark and are left out there (AGE cannot be
distributed; the relational graph serves every graph question on Citus), and so are those
marked ``one_server``, which read the plans one server makes (on a cluster the same statements
are planned on the workers; tests/test_citus.py checks those plans).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from hello_pgmem import Settings
from hello_pgmem.dev.chroot import DevDB
from hello_pgmem.dev.citus import CitusCluster
from hello_pgmem.dev.citus_url import ExternalCitus, configured
from hello_pgmem.ops import migrate

REPO = Path(__file__).resolve().parent.parent
KINDS = ("single", "citus")


def kind() -> str:
    """The deployment named by PGMEM_TEST_DEPLOYMENT (``single`` unless set)."""
    value = os.environ.get("PGMEM_TEST_DEPLOYMENT", "single")
    if value not in KINDS:
        raise ValueError(f"PGMEM_TEST_DEPLOYMENT must be one of {', '.join(KINDS)}, got {value!r}")
    return value


ON_CITUS = kind() == "citus"


def devdb(*args: str) -> str:
    done = subprocess.run(
        [str(REPO / "scripts" / "devdb"), *args],
        check=True,
        text=True,
        capture_output=True,
        env={**os.environ, "PYTHON": sys.executable},
    )
    return done.stdout.strip()


@dataclass(frozen=True)
class TestServer:
    """The server (or cluster) the tests make their databases on."""

    __test__ = False  # not a test class
    admin_url: str  # the maintenance database of the server, or of the coordinator
    cluster: CitusCluster | ExternalCitus | None = None

    @classmethod
    def start(cls) -> TestServer:
        external = configured()
        if ON_CITUS and external:
            remote = ExternalCitus(external)
            return cls(remote.admin_url, remote)
        url = devdb("up")
        if not ON_CITUS:
            return cls(make_conninfo(url, dbname="postgres"))
        cluster = CitusCluster(DevDB.from_env())
        return cls(make_conninfo(cluster.up(), dbname="postgres"), cluster)

    def create_database(self, name: str) -> str:
        """An empty database (on every node of a cluster); returns its URL."""
        if self.cluster is not None:
            self.cluster.create_database(name)
        else:
            with psycopg.connect(self.admin_url, autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return make_conninfo(self.admin_url, dbname=name)

    def drop_database(self, url: str) -> None:
        name = str(conninfo_to_dict(url)["dbname"])
        if self.cluster is not None:
            self.cluster.drop_database(name)
            return
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    def settings(self, url: str) -> Settings:
        """Settings for a database of this server (AGE off on a cluster)."""
        if self.cluster is not None:
            return Settings(database_url=url, age="off")
        return Settings(database_url=url)

    def allow_triggers(self, conn: psycopg.Connection[Any]) -> None:
        """Let this transaction create or drop a trigger on a distributed table and its function
        (Citus refuses triggers unless asked: one runs on each shard, not once on the coordinator;
        and DDL on a table and on a function in one transaction only over one connection)."""
        if self.cluster is not None:
            conn.execute("SET LOCAL citus.enable_unsafe_triggers = on")
            conn.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")

    def migrate(self, settings: Settings) -> None:
        """Migrate to head (which distributes the schema on a cluster)."""
        migrate.upgrade(settings)


@dataclass(frozen=True)
class Deployment:
    """A database set up as docs/security.md tells a DBA to: the owner, application and analytics
    roles, and the superuser that made them."""

    owner: Settings
    app: Settings
    analytics: Settings
    superuser: Settings
    roles: tuple[str, str, str]
