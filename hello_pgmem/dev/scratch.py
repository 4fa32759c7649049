"""A throw-away second cluster in the development root, for tests that stop or crash a server."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hello_pgmem.core.errors import ConfigurationError, DatabaseUnavailableError
from hello_pgmem.core.settings import IDENTIFIER, Settings
from hello_pgmem.dev.chroot import (
    PG_BIN,
    PG_MAJOR,
    SERVER_SETTINGS,
    DevDB,
    port_open,
    run_in_root,
    wait_ready,
)


class ScratchServer:
    """A second, throw-away cluster in the development root, for tests that stop or crash a server.

    It shares the root's binaries with the development server but has its own data directory and
    port, so stopping it disturbs nobody else.
    """

    def __init__(self, db: DevDB, name: str, port: int) -> None:
        if not IDENTIFIER.match(name):
            raise ConfigurationError(f"scratch server name must match ^[A-Za-z_][A-Za-z0-9_]*$, got {name!r}")
        self.db, self.port = db, port
        self.data_dir = f"/var/lib/pgmem/{PG_MAJOR}/scratch-{name}"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    @classmethod
    @contextmanager
    def running(cls, db: DevDB, name: str) -> Iterator[ScratchServer]:
        """A new scratch server on the first free port after the development server's, started;
        destroyed on exit. Its directory is this process's own (two test runs at once each have
        theirs), and a port another process took first is passed over."""
        for port in (p for p in range(db.port + 1, db.port + 200) if not port_open(p)):
            server = cls(db, f"{name}_{os.getpid()}", port)
            server.create()
            try:
                server.start()
                break
            except (subprocess.CalledProcessError, DatabaseUnavailableError):
                server.destroy()
        else:
            raise DatabaseUnavailableError(f"no free port for a scratch server after {db.port}")
        try:
            yield server
        finally:
            server.destroy()

    def new_database(self, prefix: str, **options: Any) -> Settings:
        """A new database on this server, migrated: its settings (``options`` added)."""
        import psycopg
        from psycopg import sql
        from psycopg.conninfo import make_conninfo

        from hello_pgmem.ops import migrate

        name = f"{prefix}_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        settings = Settings(database_url=make_conninfo(self.url, dbname=name), **options)
        migrate.upgrade(settings)
        return settings

    def create(self) -> None:
        """initdb (replacing an old directory of the same name) with the development settings."""
        self.destroy()
        run_in_root(
            self.db,
            f"{PG_BIN}/initdb",
            "-D",
            self.data_dir,
            "--username=postgres",
            "--auth-local=trust",
            "--auth-host=trust",
            "--encoding=UTF8",
            "--no-locale",
        )
        settings = {**SERVER_SETTINGS, "shared_buffers": "'128MB'", "port": str(self.port)}
        with open(self.db.inside(self.data_dir) / "postgresql.conf", "a") as handle:
            handle.write("".join(f"\n{key} = {value}" for key, value in settings.items()) + "\n")

    def start(self) -> None:
        log_file = f"{self.data_dir}/server.log"
        run_in_root(
            self.db, f"{PG_BIN}/pg_ctl", "-D", self.data_dir, "-l", log_file, "-w", "-t", "60", "start"
        )
        wait_ready(DevDB(self.db.home, self.port, self.db.dbname))

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: ``fast`` (clean shutdown) or ``immediate`` (a crash: recovery on start)."""
        run_in_root(self.db, f"{PG_BIN}/pg_ctl", "-D", self.data_dir, "-m", mode, "-w", "stop", check=False)

    def tool(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run a client program of the root (pg_dump, pg_restore, psql) against this server."""
        return run_in_root(
            self.db, *args[:1], "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", *args[1:]
        )

    def destroy(self) -> None:
        self.stop("immediate")
        host = self.db.inside(self.data_dir)
        if host.exists():
            shutil.rmtree(host)
