"""The local development database: PostgreSQL 17 with pgvector and Apache AGE.

For development and tests only, imported by the CLI's ``db`` command and the test suite, never by
the library. ``up`` picks the first way that works, in this order:

1. ``DATABASE_URL`` is set: use that server and only check that it answers;
2. a Docker engine answers: ``docker compose up -d --wait`` with the repository's compose file
   (:mod:`~hello_pgmem.dev.docker`);
3. root on Debian or Ubuntu: a Debian 13 root built once with debootstrap, the server run in a
   chroot (:mod:`~hello_pgmem.dev.chroot`);
4. otherwise stop with a message that names the three options.

Every command is idempotent: ``up`` on a running server returns at once. Run it as
``scripts/devdb up|down|status|url|psql`` or ``hello-pgmem db up|down|status|url``.
"""

from __future__ import annotations

import logging
import os

from hello_pgmem.core.errors import ConfigurationError, DatabaseUnavailableError
from hello_pgmem.dev import docker
from hello_pgmem.dev.chroot import DATA_DIR, PG_BIN, DevDB, can_chroot, chroot_up, run_in_root, running

log = logging.getLogger(__name__)

__all__ = ["DevDB", "check_url", "database_url", "down", "status", "up"]

NO_WAY_MESSAGE = """no PostgreSQL 17 with pgvector and Apache AGE could be provided. Choose one:
  1. point DATABASE_URL at a server that has pgvector 0.8+ (and optionally AGE 1.5+);
  2. start a Docker engine and run: docker compose up -d --wait;
  3. run this command as root on Debian or Ubuntu, so it can build a Debian 13 root with
     debootstrap (see DEVELOPERS.md)"""


def check_url(url: str, name: str = "DATABASE_URL") -> str:
    """Connect to ``url`` and return the server version, or raise DatabaseUnavailableError."""
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            row = conn.execute("SHOW server_version").fetchone()
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailableError(f"cannot connect to {name}: {exc}".strip()) from exc
    return str(row[0]) if row else "unknown"


def up() -> str:
    """Bring a server up (or check the configured one) and return its URL."""
    if configured := os.environ.get("DATABASE_URL"):
        check_url(configured)
        return configured
    if docker.available():
        docker.compose("up", "-d", "--wait")
        return DevDB.from_env().url
    if can_chroot():
        return chroot_up(DevDB.from_env())
    raise ConfigurationError(NO_WAY_MESSAGE)


def down() -> str:
    """Stop the development database; say what was stopped (or that nothing was)."""
    db = DevDB.from_env()
    if os.environ.get("DATABASE_URL"):
        log.warning("DATABASE_URL is set: not stopping a server this command did not start")
        return "nothing stopped: DATABASE_URL names a server this command did not start"
    if running(db):
        run_in_root(db, f"{PG_BIN}/pg_ctl", "-D", DATA_DIR, "-m", "fast", "-w", "stop")
        return f"stopped the development database in {db.root} (port {db.port})"
    if docker.available():
        docker.compose("stop")
        return "stopped the docker compose services"
    return f"no development database runs under {db.home}"


def status() -> tuple[bool, str]:
    """Whether the server answers, and a one-line description. Without DATABASE_URL the server
    must be this home's (PGMEM_HOME): one that answers on the port for another home, or another
    program, is named as such, and the status is down."""
    configured = bool(os.environ.get("DATABASE_URL"))
    name = "DATABASE_URL" if configured else "the development database"
    target = database_url()
    try:
        version = check_url(target, name)
    except DatabaseUnavailableError as exc:
        return False, f"down: {exc}"
    db = DevDB.from_env()
    if not configured and not running(db) and (db.root.exists() or not docker.available()):
        return False, (
            f"down: no development database runs under {db.home}; port {db.port} is answered by another "
            f"server (PostgreSQL {version}: another PGMEM_HOME's, or another program's)"
        )
    return True, f"up: PostgreSQL {version} at {target}"


def database_url() -> str:
    """The URL of the database in use: DATABASE_URL, else the development server's."""
    return os.environ.get("DATABASE_URL") or DevDB.from_env().url
