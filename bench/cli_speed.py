"""How long the command line takes, end to end, as a user sees it (run by hand, never in CI).

    .venv/bin/python bench/cli_speed.py            # needs the development database (make db)

Floors (issue 13): ``hello-pgmem --help`` within 0.3 s, ``hello-pgmem search`` on a warm database
with the hashing embedder within 1 s. Each command runs 5 times; the median is reported.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
from psycopg import sql

from hello_pgmem import Settings, dev
from hello_pgmem.db import migrations

BIN = Path(sys.executable).parent / "hello-pgmem"
RUNS = 5


def timed(args: list[str], env: dict[str, str]) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run([str(BIN), *args], env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    server = psycopg.conninfo.make_conninfo(dev.up(), dbname="postgres")
    name = f"pgmem_cli_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        url = psycopg.conninfo.make_conninfo(server, dbname=name)
        migrations.upgrade(Settings(database_url=url))
        env = {**os.environ, "DATABASE_URL": url, "EMBED_MODEL_TYPE": "hashing", "PGMEM_USER": "bench"}
        for i in range(200):
            subprocess.run(
                [str(BIN), "add", f"memory number {i} about topic {i % 7}", "--type", "episodic"],
                env=env,
                check=True,
                capture_output=True,
            ) if i < 20 else None
        subprocess.run(
            [str(BIN), "add", "working note", "--importance", "0.9"], env=env, check=True, capture_output=True
        )
        timed(["search", "topic 3"], env)  # warm the server's caches
        results = {
            "help_s": timed(["--help"], env),
            "search_s": timed(["search", "topic 3"], env),
            "search_json_s": timed(["--json", "search", "topic 3"], env),
        }
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
