"""What one hostile tenant leaves the others: the served MCP server and web view under attack.

    .venv/bin/python -m bench.hostile_load                      # both scenarios
    .venv/bin/python -m bench.hostile_load --scenario flood     # connections only
    .venv/bin/python -m bench.hostile_load --scenario documents # hostile PDFs only
    .venv/bin/python -m bench.hostile_load --scenario turns     # a user's PDF amid another's
    .venv/bin/python -m bench.hostile_load --scenario timeouts  # searches abandoned at the time limit (E5)

``flood``: ``hello-pgmem mcp --http`` and ``hello-pgmem ui``, each as a user starts it; five
loopback addresses (127.0.0.2-6) each keep 64 half-sent requests open, opening new ones as the
server cuts them off, while a sixth (127.0.0.9) sends 20 plain requests, one every 0.2 s: how
many are answered, and how fast.

``documents``: ``hello-pgmem mcp --http --files-root``; two users each ask, at the same moment,
for a one-page PDF of 2,000 overlapping lines of text (1.2 KB and 5.4 KB: the shapes that ran the
converter for minutes at gigabytes) while a third user searches its memories every 0.25 s: the
searches' latency while the conversions run, how each conversion ended and after how long, and
the converter workers' peak resident memory.

``turns``: the same server; one user sends hostile PDFs (2,000 overlapping lines; ten pages that
spin the layout; 2,000 lines of 1,000 characters) back to back from three clients for
``--seconds``, each of new bytes, while another converts a five-line PDF three times: how long each
of those takes.

``timeouts``: ``hello-pgmem mcp --http --timeout 1`` with E5; one read token sends six rounds of
four ``memory_search`` calls at once with a 20,000-character ``_x_x…`` query (the review's
reproduction), each past the time limit: how long after the last answer the server process still
uses a core (its CPU over each 0.5 s under a fifth of one core), and the CPU it spends meanwhile.

The servers run this checkout's code (``PYTHONPATH`` picks another). Results go to
bench/results/hostile-load-<date>.json.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench import harness
from bench.harness import fresh_database, percentiles
from hello_pgmem import Database, Settings
from hello_pgmem.access import create_token
from tests.abandoned import timed_out_searches  # the tests' own attacks
from tests.flood import answered, hold_half_sent
from tests.media import (  # the tests' own hostile files
    overlapping_lines_pdf,
    pdf_of_one_page,
    spinning_pdf,
)
from tests.served import free_port

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"

CLI = [sys.executable, "-c", "from hello_pgmem.cli import main; main()"]


@contextlib.contextmanager
def served(settings: Settings, arguments: list[str], log: Path) -> Iterator[int]:
    """A server of the command line on a free port, until the block ends."""
    with served_process(settings, arguments, log) as (port, _):
        yield port


@contextlib.contextmanager
def served_process(
    settings: Settings, arguments: list[str], log: Path, **env_vars: str
) -> Iterator[tuple[int, int]]:
    """A server of the command line (with ``env_vars`` set) on a free port, until the block ends:
    its port and process id."""
    port = free_port()
    env = {**os.environ, "DATABASE_URL": settings.database_url, **env_vars}
    with log.open("wb") as out:
        server = subprocess.Popen(  # not from the checkout's folder, whose code would come first
            [*CLI, *arguments, "--port", str(port)], env=env, stdout=out, stderr=out, cwd=log.parent
        )
        try:
            for _ in range(300):
                with socket.socket() as sock:
                    if sock.connect_ex(("127.0.0.1", port)) == 0:
                        break
                time.sleep(0.1)
            yield port, server.pid
        finally:
            server.terminate()
            server.wait(10)


def probe(port: int, source: str, seconds: float = 4.0) -> float | None:
    """Seconds until a plain GET from ``source`` is answered (None: no answer in ``seconds``)."""
    started = time.monotonic()
    answer = answered(port, source, seconds, "/")
    return time.monotonic() - started if answer.startswith(b"HTTP/1.1 ") else None


def flood(settings: Settings, folder: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, arguments in {
        "mcp": ["mcp", "--http", "--allow-privileged-role"],
        "ui": ["ui", "--tokens", "--allow-privileged-role"],
    }.items():
        with served(settings, arguments, folder / f"{kind}.log") as port:
            stop = threading.Event()
            attackers = [
                threading.Thread(target=hold_half_sent, args=(port, f"127.0.0.{n}", stop))
                for n in range(2, 7)
            ]
            for thread in attackers:
                thread.start()
            try:
                time.sleep(12)  # past the read limits: the sources re-open what the server cut off
                times = []
                for _ in range(20):
                    times.append(probe(port, "127.0.0.9"))
                    time.sleep(0.2)
            finally:
                stop.set()
                for thread in attackers:
                    thread.join(10)
        answered = [t for t in times if t is not None]
        out[kind] = {
            "probes": len(times),
            "answered_within_4s": len(answered),
            "seconds": {**percentiles(answered), "max": max(answered)} if answered else None,
        }
        print(kind, json.dumps(out[kind]), flush=True)
    return out


def worker_peaks(stop: threading.Event, peaks: dict[int, int]) -> None:
    """The peak resident memory (VmHWM, KiB) of every converter worker (nice 10), by pid."""
    while not stop.is_set():
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if b"_convert_server" not in (entry / "cmdline").read_bytes():
                    continue
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[16]) != 10:
                    continue  # the converter process itself, not a worker
                for line in (entry / "status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peaks[int(entry.name)] = max(peaks.get(int(entry.name), 0), int(line.split()[1]))
            except (OSError, ValueError, IndexError):
                continue
        stop.wait(0.05)


@contextlib.asynccontextmanager
async def client(url: str, token: str) -> Any:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=600) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as mcp,
    ):
        yield mcp


def documents(settings: Settings, folder: Path, from_root: bool = False) -> dict[str, Any]:
    root = folder / "files"
    hostile = {"ann": overlapping_lines_pdf(2000, 60), "bob": overlapping_lines_pdf(2000, 1000)}
    for user, data in hostile.items():
        (root / user).mkdir(parents=True)
        (root / user / "report.pdf").write_bytes(data)
    with Database(settings) as db:
        tokens = {user: create_token(db, user, [f"{user}_docs"])[0] for user in ("ann", "bob", "carl")}
    arguments = ["mcp", "--http", "--allow-privileged-role", "--files-root", str(root), "--rate", "100000"]
    peaks: dict[int, int] = {}
    with served(settings, arguments, folder / "mcp-documents.log") as port:
        url = f"http://127.0.0.1:{port}/mcp"
        stop = threading.Event()
        watcher = threading.Thread(target=worker_peaks, args=(stop, peaks))
        watcher.start()

        async def scenario() -> dict[str, Any]:
            conversions: dict[str, Any] = {}
            searches: list[float] = []
            async with client(url, tokens["carl"]) as carl:
                await carl.call_tool("memory_add", {"content": "Carl plays the cello in Berlin"})
                done = anyio.Event()

                async def convert(user: str) -> None:
                    async with client(url, tokens[user]) as mcp:
                        started = time.monotonic()
                        path = f"{user}/report.pdf" if from_root else "report.pdf"
                        result = await mcp.call_tool("rag_add_document", {"file_path": path})
                        text = "\n".join(getattr(part, "text", "") for part in result.content)
                        conversions[user] = {
                            "seconds": round(time.monotonic() - started, 1),
                            "answer": text[:200],
                            "pdf_bytes": len(hostile[user]),
                        }

                async def search() -> None:
                    while not done.is_set():
                        started = time.monotonic()
                        await carl.call_tool("memory_search", {"query": "cello"})
                        searches.append(time.monotonic() - started)
                        await anyio.sleep(0.25)

                async with anyio.create_task_group() as group:
                    group.start_soon(search)
                    async with anyio.create_task_group() as both:
                        for user in hostile:
                            both.start_soon(convert, user)
                    done.set()
            return {
                "conversions": conversions,
                "searches": len(searches),
                "search_seconds": {**percentiles(searches), "max": max(searches)},
                "searches_over_1s": sum(s > 1 for s in searches),
            }

        try:
            out = anyio.run(scenario)
        finally:
            stop.set()
            watcher.join()
    out["worker_peak_rss_mib"] = sorted(round(kib / 1024) for kib in peaks.values())
    print(json.dumps(out, indent=2), flush=True)
    return out


def five_lines_pdf(number: int) -> bytes:
    """A plain one-page PDF of five lines, its text its own for each ``number``."""
    lines = b"".join(
        b"BT /F1 11 Tf 72 %d Td (Minutes %d, line %d: the garden club met.) Tj ET\n"
        % (700 - 20 * n, number, n)
        for n in range(5)
    )
    return pdf_of_one_page(lines)


HOSTILE = {
    "dense": lambda: overlapping_lines_pdf(2000, 60),
    "spinning": spinning_pdf,
    "heavy": lambda: overlapping_lines_pdf(2000, 1000),
}


def turns(settings: Settings, folder: Path, seconds: float) -> dict[str, Any]:
    """ann sends hostile PDFs back to back from three clients for ``seconds``, each a file of new
    bytes (no conversion is skipped as already done); carl converts a five-line PDF three times
    meanwhile: how long each of his takes."""
    root = folder / "turns-files"
    (root / "ann").mkdir(parents=True)
    (root / "carl").mkdir(parents=True)
    for number in range(3):
        (root / "carl" / f"minutes-{number}.pdf").write_bytes(five_lines_pdf(number))
    with Database(settings) as db:
        tokens = {user: create_token(db, user, [f"{user}_docs"])[0] for user in ("ann", "carl")}
    arguments = ["mcp", "--http", "--allow-privileged-role", "--files-root", str(root), "--rate", "100000"]
    with served(settings, arguments, folder / "mcp-turns.log") as port:
        url = f"http://127.0.0.1:{port}/mcp"

        async def scenario() -> dict[str, Any]:
            attacks: list[dict[str, Any]] = []
            victims: list[dict[str, Any]] = []
            done = anyio.Event()

            async def attack(kind: str) -> None:
                async with client(url, tokens["ann"]) as mcp:
                    for number in range(1_000_000):
                        if done.is_set():
                            return
                        name = f"{kind}-{number}.pdf"  # new bytes after %%EOF: a file never seen
                        (root / "ann" / name).write_bytes(HOSTILE[kind]() + b"%% variant %d\n" % number)
                        started = time.monotonic()
                        result = await mcp.call_tool("rag_add_document", {"file_path": name})
                        text = "\n".join(getattr(part, "text", "") for part in result.content)
                        attacks.append(
                            {
                                "file": name,
                                "seconds": round(time.monotonic() - started, 1),
                                "answer": text[:120],
                            }
                        )

            async def victim() -> None:
                async with client(url, tokens["carl"]) as mcp:
                    for number in range(3):
                        await anyio.sleep(seconds / 4)
                        started = time.monotonic()
                        result = await mcp.call_tool(
                            "rag_add_document", {"file_path": f"minutes-{number}.pdf"}
                        )
                        text = "\n".join(getattr(part, "text", "") for part in result.content)
                        victims.append(
                            {"seconds": round(time.monotonic() - started, 2), "answer": text[:120]}
                        )
                await anyio.sleep(seconds / 4)
                done.set()

            async with anyio.create_task_group() as group:
                for kind in HOSTILE:
                    group.start_soon(attack, kind)
                group.start_soon(victim)
            return {"victim": victims, "attacks": attacks}

        out = anyio.run(scenario)
    print(json.dumps(out["victim"], indent=2), flush=True)
    return out


def cpu_seconds(pid: int) -> float:
    """The CPU a process (all its threads) has used, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timeouts(settings: Settings, folder: Path) -> dict[str, Any]:
    with Database(settings) as db:
        token = create_token(db, "rex", ["rex_docs"], mode="read")[0]
    arguments = ["mcp", "--http", "--allow-privileged-role", "--timeout", "1", "--rate", "100000"]
    with served_process(settings, arguments, folder / "mcp-timeouts.log", EMBED_MODEL_TYPE="e5") as (port, pid):

        async def rounds() -> list[Any]:
            async with client(f"http://127.0.0.1:{port}/mcp", token) as mcp:
                return await timed_out_searches(mcp)

        started = time.monotonic()
        answers = [bool(result.is_error) for result in anyio.run(rounds)]
        last, cpu_at_last = time.monotonic(), cpu_seconds(pid)
        while True:  # idle: under a fifth of a core over half a second
            cpu, wall = cpu_seconds(pid), time.monotonic()
            time.sleep(0.5)
            if (cpu_seconds(pid) - cpu) / (time.monotonic() - wall) < 0.2 or wall - last > 120:
                break
    out = {
        "answers": len(answers),
        "refused_or_stopped": sum(answers),
        "rounds_s": round(last - started, 2),
        "busy_after_last_answer_s": round(wall - last, 2),
        "cpu_after_last_answer_s": round(cpu - cpu_at_last, 2),
    }
    print(json.dumps(out, indent=2), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--scenario", choices=["flood", "documents", "turns", "timeouts", "both"], default="both"
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="turns: how long the attack lasts")
    parser.add_argument(
        "--paths-from-root",
        action="store_true",
        help="name files from --files-root itself, not the user's folder (servers before per-user folders)",
    )
    args = parser.parse_args()
    result: dict[str, Any] = {"machine": harness.machine()}
    with fresh_database() as settings, tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        if args.scenario in ("flood", "both"):
            result["flood"] = flood(settings, folder)
        if args.scenario in ("documents", "both"):
            result["documents"] = documents(settings, folder, args.paths_from_root)
        if args.scenario == "turns":
            result["turns"] = turns(settings, folder, args.seconds)
        if args.scenario == "timeouts":
            result["timeouts"] = timeouts(settings, folder)
    RESULTS.mkdir(exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M")
    (RESULTS / f"hostile-load-{stamp}.json").write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
