"""The servers under a flood: 1,100 half-sent requests against ``hello-pgmem mcp --http`` and
``hello-pgmem ui``, each run as the command a user runs, with an open-file limit of 512 (below the
flood, as a small machine's 1,024 would be). Another address is still answered at once, the log
stays short, and a half-sent request is cut off; plus the throttle's rules for credentials."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hello_pgmem import Settings
from hello_pgmem.access.serving import RepeatFilter
from hello_pgmem.access.throttle import FailedTokens
from tests.served import free_port

HELLO_PGMEM = str(Path(sys.executable).with_name("hello-pgmem"))
FILES = 512


def low_file_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILES, FILES))


def answered(port: int, source: str, seconds: float) -> bytes:
    """The first bytes of the answer to a plain GET from ``source`` (b"" when none came)."""
    with socket.socket() as sock:
        sock.settimeout(seconds)
        sock.bind((source, 0))
        try:
            sock.connect(("127.0.0.1", port))
            sock.sendall(b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            return sock.recv(64)
        except OSError:
            return b""


def wait_until_served(port: int, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while not answered(port, "127.0.0.1", 1):
        assert server.poll() is None and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.2)


def half_sent(port: int, count: int) -> list[socket.socket]:
    """``count`` connections that each send half a request's headers and wait."""
    opened = []
    for _ in range(count):
        sock = socket.socket()
        sock.settimeout(0.5)
        try:
            sock.connect(("127.0.0.1", port))
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        except OSError:
            pass
        opened.append(sock)
    return opened


@pytest.fixture(scope="module", params=["mcp", "ui"])
def flooded(
    request: pytest.FixtureRequest, settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[int, Path]]:
    """A server of the command line, under a low open-file limit; its port and its log."""
    port = free_port()
    command = {
        "mcp": ["mcp", "--http", "--allow-privileged-role"],
        "ui": ["ui", "--tokens", "--allow-privileged-role"],
    }[request.param]
    log = tmp_path_factory.mktemp(request.param) / "server.log"
    env = {**os.environ, "DATABASE_URL": settings.database_url, "PGMEM_SCHEMA": settings.schema_name}
    with (
        log.open("wb") as out,
        subprocess.Popen(
            [HELLO_PGMEM, *command, "--port", str(port)],
            env=env,
            stdout=out,
            stderr=out,
            preexec_fn=low_file_limit,
        ) as server,
    ):
        try:
            wait_until_served(port, server)
            yield port, log
        finally:
            server.terminate()
            server.wait(10)


def test_a_flood_of_half_sent_requests_does_not_stop_the_server(flooded: tuple[int, Path]) -> None:
    port, log = flooded
    sockets = half_sent(port, 1100)
    try:
        started = time.monotonic()
        answer = answered(port, "127.0.0.2", 5)
        assert answer.startswith(b"HTTP/1.1 "), answer
        assert time.monotonic() - started < 3
        time.sleep(1)
        lines = log.read_text(errors="replace").splitlines()
        assert len(lines) < 40, lines[-5:]
    finally:
        for sock in sockets:
            sock.close()


def test_a_half_sent_request_is_cut_off(flooded: tuple[int, Path]) -> None:
    port, _ = flooded
    (sock,) = half_sent(port, 1)
    with sock:
        sock.settimeout(20)
        started = time.monotonic()
        assert sock.recv(64) == b"", "the server closed the connection"
        assert time.monotonic() - started < 15


def test_repeated_log_records_are_held_to_a_few_a_minute() -> None:
    import logging

    gate = RepeatFilter(per_minute=3)
    records = [
        logging.LogRecord("asyncio", logging.ERROR, "", 0, "accept failed", None, None) for _ in range(50)
    ]
    passed = [r for r in records if gate.filter(r)]
    assert len(passed) == 3
    other = logging.LogRecord("asyncio", logging.ERROR, "", 0, "another", None, None)
    assert gate.filter(other)


def test_guesses_shut_out_unknown_credentials_only() -> None:
    gate = FailedTokens(per_minute=3)
    gate.worked("pgm_good", now=0)
    for moment in range(3):
        gate.failed("10.0.0.1", now=moment)
    assert gate.admits("10.0.0.1", "pgm_guess", now=5) > 0
    assert gate.admits("10.0.0.1", "pgm_good", now=5) == 0, "a credential that worked still works"
    assert gate.admits("10.0.0.2", "pgm_guess", now=5) == 0, "another address is not held"
    assert gate.admits("10.0.0.1", "pgm_guess", now=70) == 0, "the minute passes"
