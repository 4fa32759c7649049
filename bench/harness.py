"""What the benchmark scripts share: a fresh database on the development server, percentiles,
and a description of the machine."""

from __future__ import annotations

import datetime as dt
import os
import platform
import statistics
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.metadata import version
from typing import Any

import psycopg
from psycopg import sql

from hello_pgmem import Settings, dev
from hello_pgmem.ops import migrate


@contextmanager
def fresh_database(keep: bool = False, **options: Any) -> Iterator[Settings]:
    """A new, migrated database on the development server, dropped afterwards unless ``keep``."""
    server = psycopg.conninfo.make_conninfo(dev.up(), dbname="postgres")
    name = f"pgmem_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        settings = Settings(database_url=psycopg.conninfo.make_conninfo(server, dbname=name), **options)
        migrate.upgrade(settings)
        yield settings
    finally:
        if not keep:
            with psycopg.connect(server, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@contextmanager
def role_deployment(prefix: str) -> Iterator[tuple[Settings, Settings]]:
    """A new database deployed the documented way (a superuser prepares the owner, the owner
    migrates, a superuser grants the application role): the superuser's and the application
    role's settings. Database and roles are dropped afterwards."""
    from hello_pgmem.ops import grants

    server = psycopg.conninfo.make_conninfo(dev.up(), dbname="postgres")
    suffix = uuid.uuid4().hex[:6]
    owner, app, name = f"bench_owner_{suffix}", f"bench_app_{suffix}", f"{prefix}_{suffix}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = psycopg.conninfo.make_conninfo(server, dbname=name)
    superuser = Settings(database_url=url)
    try:
        with psycopg.connect(url) as conn:
            grants.apply(conn, grants.owner_statements(conn, superuser, owner, create=True))
        migrate.upgrade(Settings(database_url=psycopg.conninfo.make_conninfo(url, user=owner)))
        with psycopg.connect(url) as conn:
            grants.apply(conn, grants.role_statements(conn, superuser, app, create=True))
        yield superuser, Settings(database_url=psycopg.conninfo.make_conninfo(url, user=app))
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            for role in (app, owner):
                conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """p50, p95, p99 and the mean of some measurements."""
    ordered = sorted(values)

    def at(p: float) -> float:
        return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99), "mean": statistics.fmean(ordered)}


def machine() -> dict[str, Any]:
    """Where and when a benchmark ran: platform, cores, Python, PostgreSQL and its extensions."""
    with psycopg.connect(dev.up()) as conn:
        server = conn.execute("SHOW server_version").fetchone()
        extensions = dict(
            conn.execute(
                "SELECT name, default_version FROM pg_available_extensions WHERE name IN ('vector', 'age')"
            ).fetchall()
        )
    return {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "psycopg": version("psycopg"),
        "postgresql": server[0] if server else None,
        "pgvector": extensions.get("vector"),
        "age": extensions.get("age"),
        "date": dt.datetime.now(dt.UTC).isoformat(),
    }


def run_for(
    threads: Sequence[threading.Thread], seconds: float, stop: threading.Event, join_s: float
) -> None:
    """Start ``threads``, let them run ``seconds``, set ``stop`` and wait up to ``join_s`` for each."""
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join(join_s)
