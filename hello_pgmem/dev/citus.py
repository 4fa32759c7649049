"""A local Citus cluster for development and tests, from a Citus already installed in the
development root: a coordinator and two workers on 127.0.0.1, each a cluster of its own.

``scripts/devdb citus up|down|status|url|installed``. The project never builds Citus: no package
registry these machines reach offers it. Install it from Citus Data's own packages (for
PostgreSQL 17, into the development root) or run Citus Data's image (the ``citus`` profile of
docker-compose.yml); without it the Citus tests are skipped and ``citus up`` says how to get one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from hello_pgmem.core.errors import ConfigurationError
from hello_pgmem.core.settings import IDENTIFIER
from hello_pgmem.dev.chroot import PG_MAJOR, DevDB, locked, port_open, psql
from hello_pgmem.dev.scratch import ScratchServer

log = logging.getLogger(__name__)

CITUS_LIBRARY = f"/usr/lib/postgresql/{PG_MAJOR}/lib/citus.so"
NODES = ("coordinator", "worker1", "worker2")
SPARE = "worker3"  # started only by add_worker: a third worker to rebalance onto
PORT_OFFSET = 10  # the coordinator listens on the development port + 10, the workers after it
# Citus first; pgvector loaded in every session, because the functions a migration creates on the
# coordinator are created on the workers too, where a SET hnsw.* clause needs the library loaded
# (PostgreSQL refuses unknown settings to a role that is not superuser).
NODE_SETTINGS = "\nshared_preload_libraries = 'citus,vector'\nmax_prepared_transactions = 100\n"
NOT_INSTALLED = (
    "Citus is not installed in the development root ({library}): install Citus for PostgreSQL "
    f"{PG_MAJOR} from Citus Data's packages into it, or run Citus Data's image with "
    "'docker compose --profile citus up' (docs/citus.md)"
)


def installed(db: DevDB) -> bool:
    """Whether the development root has a Citus for its PostgreSQL."""
    return db.inside(CITUS_LIBRARY).exists()


@dataclass(frozen=True)
class CitusCluster:
    """One coordinator and two workers in the development root."""

    db: DevDB

    @property
    def ports(self) -> dict[str, int]:
        first = self.db.port + PORT_OFFSET
        return {name: first + i for i, name in enumerate((*NODES, SPARE))}

    def node(self, name: str) -> ScratchServer:
        return ScratchServer(self.db, f"citus_{name}", self.ports[name])

    def url(self, dbname: str | None = None) -> str:
        """The coordinator's URL (the database the cluster serves, by default)."""
        return f"postgresql://postgres@127.0.0.1:{self.ports['coordinator']}/{dbname or self.db.dbname}"

    def psql(self, name: str, sql: str, dbname: str | None = None) -> str:
        """Run ``sql`` on a node, in the cluster's database unless ``dbname`` names another."""
        node = DevDB(self.db.home, self.ports[name], self.db.dbname)
        return psql(node, sql, dbname or self.db.dbname)

    def up(self) -> str:
        """Create and start the three nodes and join the workers to the coordinator, with the
        installed Citus; idempotent. Returns the coordinator's URL."""
        if not installed(self.db):
            raise ConfigurationError(NOT_INSTALLED.format(library=self.db.inside(CITUS_LIBRARY)))
        with locked(self.db):
            for name in NODES:
                self._start(name)
            self.create_database(self.db.dbname)
        return self.url()

    def _start(self, name: str) -> None:
        server = self.node(name)
        if not self.db.inside(server.data_dir + "/PG_VERSION").exists():
            server.create()
        conf = self.db.inside(server.data_dir) / "postgresql.conf"
        if NODE_SETTINGS not in conf.read_text():
            with open(conf, "a") as handle:
                handle.write(NODE_SETTINGS)
            server.stop()
        if not port_open(self.ports[name]):
            server.start()

    def create_database(self, dbname: str) -> None:
        """A database on every node with citus, the workers joined to its coordinator (Citus does
        not create databases on workers), then vector made on the coordinator, which Citus
        creates on the workers as one distributed object; idempotent."""
        _check_name(dbname)
        for name in NODES:
            self._create_on(name, dbname)
        coordinator = self.ports["coordinator"]
        if str(coordinator) not in self._joined(dbname):
            self.psql("coordinator", f"SELECT citus_set_coordinator_host('127.0.0.1', {coordinator})", dbname)
        for name in NODES[1:]:
            self._join(name, dbname)
        if self.psql("coordinator", "SELECT 1 FROM pg_extension WHERE extname = 'vector'", dbname) != "1":
            self.psql("coordinator", "CREATE EXTENSION vector", dbname)

    def add_worker(self, dbname: str | None = None) -> int:
        """Start the spare third worker and join it to the cluster of ``dbname`` (Citus keeps its
        node list per database), with the extensions the others have; idempotent. Shards move to
        it only when rebalanced (``SELECT citus_rebalance_start()``). Returns its port."""
        dbname = dbname or self.db.dbname
        _check_name(dbname)
        with locked(self.db):
            self._start(SPARE)
        self._create_on(SPARE, dbname)
        self._join(SPARE, dbname)
        return self.ports[SPARE]

    def _create_on(self, name: str, dbname: str) -> None:
        exists = self.psql(name, f"SELECT 1 FROM pg_database WHERE datname = '{dbname}'", "postgres")
        if exists != "1":
            self.psql(name, f'CREATE DATABASE "{dbname}"', "postgres")
        # a worker that holds the cluster's metadata refuses even CREATE EXTENSION IF NOT EXISTS
        if self.psql(name, "SELECT 1 FROM pg_extension WHERE extname = 'citus'", dbname) != "1":
            self.psql(name, "CREATE EXTENSION citus", dbname)

    def _joined(self, dbname: str) -> list[str]:
        return self.psql(
            "coordinator", "SELECT string_agg(nodeport::text, ',') FROM pg_dist_node", dbname
        ).split(",")

    def _join(self, name: str, dbname: str) -> None:
        if str(self.ports[name]) not in self._joined(dbname):
            self.psql("coordinator", f"SELECT citus_add_node('127.0.0.1', {self.ports[name]})", dbname)

    def drop_database(self, dbname: str) -> None:
        """Drop a database from every node (the coordinator first)."""
        _check_name(dbname)
        for name in (*NODES, SPARE):
            if name != SPARE or port_open(self.ports[name]):
                self.psql(name, f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)', "postgres")

    def down(self) -> list[str]:
        """Stop the nodes that run; return their names."""
        stopped = []
        for name in reversed((*NODES, SPARE)):
            if port_open(self.ports[name]):
                self.node(name).stop()
                stopped.append(name)
        return stopped

    def status(self) -> tuple[bool, str]:
        ports = self.ports
        shown = [name for name in (*NODES, SPARE) if name != SPARE or port_open(ports[name])]
        lines = [
            f"{name}: 127.0.0.1:{ports[name]} {'up' if port_open(ports[name]) else 'down'}" for name in shown
        ]
        ok = installed(self.db) and all(port_open(ports[name]) for name in NODES)
        return ok, "\n".join([f"citus installed: {'yes' if installed(self.db) else 'no'}", *lines])


def _check_name(dbname: str) -> None:
    if not IDENTIFIER.match(dbname):
        raise ConfigurationError(f"database name must match ^[A-Za-z_][A-Za-z0-9_]*$, got {dbname!r}")
