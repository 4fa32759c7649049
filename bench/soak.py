"""Soak: mixed load for several users while faults are injected; run by hand.

    .venv/bin/python -m bench.soak --minutes 20

On a scratch cluster of the development root: writer threads add, search, update, remove,
forget and consolidate for several users, and a child process adds batches; every
``--fault-every`` seconds one fault is injected in turn (a clean server restart, a server crash,
a SIGKILL of the batch writer). After each fault the integrity checker runs; at the end every
acknowledged add must be present exactly once unless acknowledged removed. Prints, and writes
to bench/results/soak-<date>.json, the operations run, faults injected and violations found.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from hello_pgmem import Database, HashingEmbedder, HelloPgmemError, MemoryConfig, Settings
from hello_pgmem.db import migrations
from hello_pgmem.dev.chroot import DevDB, chroot_up, port_open
from hello_pgmem.dev.scratch import ScratchServer
from hello_pgmem.memory import MemoryManager
from hello_pgmem.ops.check import check_integrity

REPO = Path(__file__).resolve().parent.parent
ROOMY = MemoryConfig(working_memory_capacity=100_000, working_memory_tokens=100_000_000)
BATCH_WRITER = """
import sys
from hello_pgmem import Database, HashingEmbedder, Settings
from hello_pgmem.memory import MemoryManager
with Database(Settings(database_url=sys.argv[1], connect_timeout_s=1)) as db:
    manager = MemoryManager(user_id="batcher", database=db, embedder=HashingEmbedder())
    batch = int(sys.argv[2])
    while True:
        try:
            manager.add_memories([f"batch {batch} item {i}" for i in range(100)], "episodic", 0.5,
                                 [{"batch": batch}] * 100)
            print(batch, flush=True)
            batch += 1
        except Exception:
            pass
"""


class Writer(threading.Thread):
    """Mixed operations for one user until stopped; remembers what the server acknowledged."""

    def __init__(self, db: Database, user: str, seed: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.manager = MemoryManager(ROOMY, user_id=user, database=db, embedder=HashingEmbedder())
        self.rng, self.stop = random.Random(seed), stop
        self.added: list[str] = []
        self.long_term: list[str] = []
        self.removed: set[str] = set()
        self.operations = 0
        self.unavailable = 0
        self.unexpected: list[str] = []

    def run(self) -> None:
        step = 0
        while not self.stop.is_set():
            step += 1
            action = self.rng.choice(
                ("add", "add", "add", "search", "update", "remove", "forget", "consolidate")
            )
            try:
                self.act(action, step)
                self.operations += 1
            except HelloPgmemError as exc:
                if type(exc).__name__ == "DatabaseUnavailableError":
                    self.unavailable += 1
                    time.sleep(0.05)
                else:
                    self.unexpected.append(f"{action}: {exc}")
            except Exception as exc:  # anything else is a finding
                self.unexpected.append(f"{action}: {type(exc).__name__}: {exc}")

    def act(self, action: str, step: int) -> None:
        manager, rng = self.manager, self.rng
        if action == "add":
            kind = rng.choice(("working", "episodic", "semantic"))
            memory_id = str(manager.add_memory(f"{manager.user_id} {step} 张三在Acme用Python", kind, 0.6))
            self.added.append(memory_id)
            if kind != "working":
                self.long_term.append(memory_id)
        elif action == "search":
            manager.retrieve_memories("Python Acme", limit=5)
        elif action == "update" and self.added:
            manager.update_memory(rng.choice(self.added), importance=round(rng.uniform(0.5, 0.9), 2))
        elif action == "remove" and self.long_term:
            victim = rng.choice(self.long_term)
            if victim not in self.removed and manager.remove_memory(victim):
                self.removed.add(victim)
        elif action == "forget":
            manager.forget_memories("importance_based", threshold=0.3)
        elif action == "consolidate":
            manager.consolidate_memories("working", "episodic", importance_threshold=0.5)


def start_batcher(url: str, first_batch: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", BATCH_WRITER, url, str(first_batch)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--fault-every", type=float, default=20, help="seconds between faults")
    parser.add_argument("--users", type=int, default=4)
    args = parser.parse_args()
    devdb = DevDB.from_env()
    chroot_up(devdb)
    port = next(p for p in range(devdb.port + 1, devdb.port + 50) if not port_open(p))
    server = ScratchServer(devdb, "soak", port)
    server.create()
    server.start()
    name = f"soak_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    settings = Settings(database_url=make_conninfo(server.url, dbname=name), connect_timeout_s=1)
    migrations.upgrade(settings)
    stop = threading.Event()
    faults: list[dict[str, Any]] = []
    violations: list[str] = []
    batches_acked: list[int] = []
    with Database(settings) as db:
        writers = [Writer(db, f"user{i}", i, stop) for i in range(args.users)]
        for writer in writers:
            writer.start()
        batcher = start_batcher(settings.database_url, 0)
        reader = threading.Thread(
            target=lambda: [batches_acked.append(int(line)) for line in batcher.stdout or []], daemon=True
        )
        reader.start()
        deadline = time.monotonic() + args.minutes * 60
        kinds = ("restart", "crash", "sigkill")
        while time.monotonic() < deadline:
            time.sleep(args.fault_every)
            kind = kinds[len(faults) % len(kinds)]
            if kind == "sigkill":
                batcher.send_signal(signal.SIGKILL)
                batcher.wait()
                reader.join()
                batcher = start_batcher(
                    settings.database_url, 1 + max(batches_acked, default=0) + 1000 * len(faults)
                )
                reader = threading.Thread(
                    target=lambda b=batcher: [batches_acked.append(int(line)) for line in b.stdout or []],
                    daemon=True,
                )
                reader.start()
            else:
                server.stop("fast" if kind == "restart" else "immediate")
                time.sleep(2)
                server.start()
            time.sleep(2)
            report = check_integrity(db)
            faults.append({"fault": kind, "violations": len(report.violations)})
            violations += [f"after {kind}: {v.check} ({v.count})" for v in report.violations]
            print(
                f"{len(faults):3d} {kind:8s} ops {sum(w.operations for w in writers):7d} "
                f"violations {len(report.violations)}",
                flush=True,
            )
        stop.set()
        for writer in writers:
            writer.join()
        batcher.send_signal(signal.SIGKILL)
        batcher.wait()
        crashes = sum(1 for f in faults if f["fault"] == "crash")
        with db.transaction(all_rows=True) as conn:
            present: dict[str, int] = {}
            for (memory_id,) in conn.execute(
                "SELECT id::text FROM memories UNION ALL SELECT id::text FROM working_memories"
            ):
                present[memory_id] = present.get(memory_id, 0) + 1
            sizes = dict(
                conn.execute(
                    "SELECT (metadata->>'batch')::int, count(*) FROM memories WHERE user_id = 'batcher' GROUP BY 1"
                ).fetchall()
            )
        for writer in writers:
            missing = [i for i in writer.long_term if i not in writer.removed and i not in present]
            if missing:
                violations.append(
                    f"{writer.manager.user_id}: {len(missing)} acknowledged long-term adds missing"
                )
            if writer.removed & set(present):
                violations.append(f"{writer.manager.user_id}: removed memories present")
            if crashes == 0:
                lost = [i for i in writer.added if i not in writer.removed and i not in present]
                if lost:
                    violations.append(f"{writer.manager.user_id}: {len(lost)} acknowledged adds missing")
        if any(count > 1 for count in present.values()):
            violations.append("a memory exists twice")
        if any(size != 100 for size in sizes.values()) or any(b not in sizes for b in batches_acked):
            violations.append("a partial or missing batch")
        final = check_integrity(db)
        violations += [f"final: {v.check} ({v.count})" for v in final.violations]
        result = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "minutes": args.minutes,
            "users": args.users,
            "operations": sum(w.operations for w in writers) + 100 * len(batches_acked),
            "operations_failed_unavailable": sum(w.unavailable for w in writers),
            "unexpected_errors": [e for w in writers for e in w.unexpected][:20],
            "faults": {k: sum(1 for f in faults if f["fault"] == k) for k in kinds},
            "batches_acknowledged": len(batches_acked),
            "violations": violations,
        }
    server.destroy()
    out = REPO / "bench" / "results" / f"soak-{datetime.now(UTC):%Y%m%d-%H%M}.json"
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps(result, indent=2, ensure_ascii=False))
    print(f"written to {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
