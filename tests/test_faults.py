"""Faults: a server restarted or crashed under load, a client killed mid-batch, timeouts, and a
pg_dump / pg_restore round trip. They run on a scratch cluster of their own (hello_pgmem.dev.scratch),
so stopping it disturbs no other test; the integrity checker runs after every scenario.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from hello_pgmem import (
    Database,
    DatabaseTimeoutError,
    HashingEmbedder,
    HelloPgmemError,
    KnowledgeBase,
    Settings,
)
from hello_pgmem.dev.chroot import DevDB
from hello_pgmem.dev.scratch import ScratchServer
from hello_pgmem.memory import MemoryManager
from hello_pgmem.ops.check import check_integrity
from tests.conftest import ROOMY, Clock, memory_copies
from tests.patience import patience

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def scratch(server_url: str) -> Iterator[ScratchServer]:
    if os.environ.get("DATABASE_URL"):
        pytest.skip("the fault tests stop servers: they need the development root, not DATABASE_URL")
    with ScratchServer.running(DevDB.from_env(), "faults") as server:
        yield server


def migrated_database(server: ScratchServer, **settings: Any) -> Settings:
    return server.new_database("faults", **settings)


def wait_until(condition: Callable[[], bool], timeout: float = 30) -> None:
    """Poll ``condition`` until it holds (a test that waits for an event, not for a fixed time)."""
    deadline = time.monotonic() + patience(timeout)
    while not condition():
        assert time.monotonic() < deadline, "waited too long"
        time.sleep(0.02)


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_a_server_restart_under_load(scratch: ScratchServer, mode: str) -> None:
    """Writers keep adding while the server stops (cleanly, or as a crash) and comes back."""
    settings = migrated_database(scratch, connect_timeout_s=1)
    acked: dict[str, str] = {}  # id -> memory type
    failures: list[tuple[str, float]] = []
    stop = threading.Event()
    with Database(settings) as db:
        manager = MemoryManager(ROOMY, user_id="eve", database=db, embedder=HashingEmbedder())
        for kind in ("episodic", "semantic", "working"):  # warm up (the first add loads the extractor)
            acked[str(manager.add_memory(f"warm-up {kind}", kind, 0.6))] = kind

        def writer(n: int) -> None:
            i = 0
            while not stop.is_set():
                kind = ("episodic", "semantic", "working")[i % 3]
                started = time.monotonic()
                try:
                    acked[str(manager.add_memory(f"{n}-{i} 张三在Acme负责Python {i}", kind, 0.6))] = kind
                except HelloPgmemError as exc:
                    failures.append((type(exc).__name__, time.monotonic() - started))
                    time.sleep(0.05)
                i += 1

        writers = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
        for thread in writers:
            thread.start()
        warmed = len(acked)
        wait_until(lambda: len(acked) >= warmed + 20)  # the writers are under way
        scratch.stop(mode)
        wait_until(lambda: len(failures) >= len(writers))  # the outage is seen
        failed_during_outage = len(failures)
        scratch.start()
        resumed_at = len(acked)
        deadline = time.monotonic() + patience(30)
        while len(acked) < resumed_at + 20 and time.monotonic() < deadline:
            time.sleep(0.1)
        stop.set()
        for thread in writers:
            thread.join()
        assert failed_during_outage > 0, "the outage was seen"
        assert {name for name, _ in failures} == {"DatabaseUnavailableError"}, failures
        # prompt failures, not hangs: a few connect timeouts of 1 s at most, with room for a loaded machine
        assert max(seconds for _, seconds in failures) < 5, sorted(round(s, 2) for _, s in failures)
        assert len(acked) >= resumed_at + 20, "the pool recovered by itself"
        present = set(memory_copies(db, "eve"))
        expected = {i for i, kind in acked.items() if mode == "fast" or kind != "working"}
        assert expected <= present, "every acknowledged write is there"
        assert len(present - set(acked)) <= len(writers), "at most the in-flight add of each writer"
        report = check_integrity(db)
        assert report.ok, report.text()


BATCH_WRITER = """
import sys
from hello_pgmem import Database, HashingEmbedder, Settings
from hello_pgmem.memory import MemoryManager
with Database(Settings(database_url=sys.argv[1])) as db:
    manager = MemoryManager(user_id="kim", database=db, embedder=HashingEmbedder())
    for batch in range(1000):
        contents = [f"batch {batch} item {i} 李四在Globex工作" for i in range(200)]
        manager.add_memories(contents, "semantic", 0.5, [{"batch": batch}] * 200)
        print(batch, flush=True)
"""


def test_a_client_killed_mid_batch_leaves_whole_batches_only(scratch: ScratchServer) -> None:
    settings = migrated_database(scratch)
    command = [sys.executable, "-c", BATCH_WRITER, settings.database_url]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=REPO) as child:
        assert child.stdout is not None
        acked = [int(child.stdout.readline()) for _ in range(3)]
        time.sleep(0.15)  # well inside the next batch
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    with Database(settings) as db:
        with db.transaction("kim") as conn:
            sizes = dict(
                conn.execute("SELECT (metadata->>'batch')::int, count(*) FROM memories GROUP BY 1").fetchall()
            )
        assert all(sizes.get(batch) == 200 for batch in acked), sizes
        assert set(sizes.values()) == {200}, "no batch is partly there"
        report = check_integrity(db)
        assert report.ok, report.text()


def test_a_statement_timeout_is_a_clear_error(database: Database) -> None:
    impatient = Settings(**{**database.settings.model_dump(), "statement_timeout_ms": 200})
    with Database(impatient) as db:
        started = time.monotonic()
        with (
            pytest.raises(DatabaseTimeoutError, match="PGMEM_STATEMENT_TIMEOUT_MS=200"),
            db.transaction() as conn,
        ):
            conn.execute("SELECT pg_sleep(5)")
        assert time.monotonic() - started < 2


def test_dump_and_restore_give_identical_search_results(scratch: ScratchServer, tmp_path: Path) -> None:
    source = migrated_database(scratch)
    queries = ("Python", "Berlin 工作", "张三", "hiking")
    embedder = HashingEmbedder()
    clock = Clock()  # scores decay with time: both searches happen at the same instant

    def answers(settings: Settings) -> list[object]:
        with Database(settings) as db:
            results: list[object] = []
            for user in ("ann", "ben"):
                manager = MemoryManager(user_id=user, database=db, embedder=embedder, clock=clock)
                for query in queries:
                    found = manager.retrieve_memories(query, limit=5)
                    results.append([(m.id, round(m.score or 0, 9)) for m in found])
                results.append(
                    sorted(
                        manager.cypher("MATCH (e:Entity {user_id: $user_id}) RETURN e.name", columns=("n",))
                    )
                )
            hits = KnowledgeBase(db, embedder, "docs").search("Berlin handbook", top_k=5)
            results.append([(h.id, round(h.score, 9)) for h in hits])
            report = check_integrity(db)
            assert report.ok, report.text()
            return results

    with Database(source) as db:
        for user in ("ann", "ben"):
            manager = MemoryManager(user_id=user, database=db, embedder=embedder, clock=clock)
            manager.add_memory(f"{user}: 张三在Berlin用Python工作", "semantic", 0.8)
            manager.add_memory(f"{user} went hiking near Berlin", "episodic", 0.6)
        KnowledgeBase(db, embedder, "docs").add_text(
            "# Handbook\n\nBerlin office.\n\n## Travel\n\nTrains.", "h"
        )
    before = answers(source)
    dump = "/tmp/pgmem-faults.dump"  # inside the root, where pg_dump runs
    source_db = psycopg.conninfo.conninfo_to_dict(source.database_url)["dbname"]
    scratch.tool("pg_dump", "-Fc", "-f", dump, "-d", str(source_db))
    target = f"{source_db}_restored"
    with psycopg.connect(scratch.url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(target)))
    scratch.tool("pg_restore", "--exit-on-error", "-d", target, dump)
    restored = Settings(database_url=make_conninfo(scratch.url, dbname=target))
    assert answers(restored) == before
