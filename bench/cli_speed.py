"""How long the command line takes, end to end, as a user sees it (run by hand, never in CI).

    .venv/bin/python -m bench.cli_speed            # needs the development database (make db)

Floors: ``hello-pgmem --help`` within 0.3 s, ``hello-pgmem search`` on a warm database within 1 s
with the hashing embedder. Timed with the default embedder (multilingual E5, each command loading
it) and with hashing; each command runs 5 times, the median is reported.
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


def timings(server: str, embedder: dict[str, str]) -> dict[str, float]:
    """The commands' times on a database of their own, with the embedder ``embedder`` names
    (``{}``: the default one, multilingual E5, which ``make install`` gives)."""
    name = f"pgmem_cli_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        url = psycopg.conninfo.make_conninfo(server, dbname=name)
        migrations.upgrade(Settings(database_url=url))
        environ = {k: v for k, v in os.environ.items() if not k.startswith("EMBED_")}
        env = {**environ, **embedder, "DATABASE_URL": url, "PGMEM_USER": "bench"}
        for i in range(20):
            subprocess.run(
                [str(BIN), "add", f"memory number {i} about topic {i % 7}", "--type", "episodic"],
                env=env,
                check=True,
                capture_output=True,
            )
        subprocess.run(
            [str(BIN), "add", "working note", "--importance", "0.9"], env=env, check=True, capture_output=True
        )
        timed(["search", "topic 3"], env)  # warm the server's caches (and embed what waits)
        return {
            "help_s": timed(["--help"], env),
            "search_s": timed(["search", "topic 3"], env),
            "search_json_s": timed(["--json", "search", "topic 3"], env),
        }
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def main() -> None:
    server = psycopg.conninfo.make_conninfo(dev.up(), dbname="postgres")
    results = {
        "default (multilingual E5)": timings(server, {}),
        "hashing": timings(server, {"EMBED_MODEL_TYPE": "hashing"}),
    }
    print(json.dumps(results, indent=2))
    out = (
        Path(__file__).resolve().parent
        / "results"
        / f"cli-speed-{time.strftime('%Y%m%d-%H%M', time.gmtime())}.json"
    )
    out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
