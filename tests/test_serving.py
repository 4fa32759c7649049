"""The servers under a flood: 1,100 half-sent requests against ``hello-pgmem mcp --http`` and
``hello-pgmem ui``, each run as the command a user runs, with an open-file limit of 512 (below the
flood, as a small machine's 1,024 would be). Another address is still answered at once, the log
stays short, and a half-sent request is cut off; plus the throttle's rules for credentials."""

from __future__ import annotations

import inspect
import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hello_pgmem import Settings
from hello_pgmem.access.serving import RepeatFilter, client_key
from hello_pgmem.access.throttle import FailedTokens
from tests.flood import answered, half_sent, hold_half_sent
from tests.patience import patience
from tests.served import free_port

HELLO_PGMEM = str(Path(sys.executable).with_name("hello-pgmem"))
FILES = 512


def low_file_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILES, FILES))


def usual_file_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))


def wait_until_served(port: int, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while not answered(port, "127.0.0.1", 1):
        assert server.poll() is None and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.2)


@contextmanager
def command_server(
    kind: str, settings: Settings, log: Path, limit: Callable[[], None], *options: str
) -> Iterator[tuple[int, Path]]:
    """``hello-pgmem mcp --http`` or ``ui`` as a user starts it (with ``options``), under an
    open-file limit."""
    port = free_port()
    command = {
        "mcp": ["mcp", "--http", "--allow-privileged-role"],
        "ui": ["ui", "--tokens", "--allow-privileged-role"],
    }[kind]
    env = {**os.environ, "DATABASE_URL": settings.database_url, "PGMEM_SCHEMA": settings.schema_name}
    with (
        log.open("wb") as out,
        subprocess.Popen(
            [HELLO_PGMEM, *command, "--port", str(port), *options],
            env=env,
            stdout=out,
            stderr=out,
            preexec_fn=limit,
        ) as server,
    ):
        try:
            wait_until_served(port, server)
            yield port, log
        finally:
            server.terminate()
            server.wait(10)


@pytest.fixture(scope="module", params=["mcp", "ui"])
def flooded(
    request: pytest.FixtureRequest, settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[int, Path]]:
    """A server of the command line, under a low open-file limit; its port and its log."""
    log = tmp_path_factory.mktemp(request.param) / "server.log"
    with command_server(request.param, settings, log, low_file_limit) as served:
        yield served


@pytest.mark.parametrize("kind", ["mcp", "ui"])
def test_a_few_addresses_holding_half_sent_requests_leave_room_for_others(
    kind: str, settings: Settings, tmp_path: Path
) -> None:
    """Five addresses each keep 64 half-sent requests open, opening new ones as the server cuts
    them off; 19 of 20 requests of a sixth address are answered within 4 s."""
    with command_server(kind, settings, tmp_path / "server.log", usual_file_limit) as (port, _):
        stop = threading.Event()
        attackers = [
            threading.Thread(target=hold_half_sent, args=(port, f"127.0.0.{n}", stop)) for n in range(2, 7)
        ]
        for thread in attackers:
            thread.start()
        try:
            time.sleep(4)  # the attack in full, one cut-off and re-opening behind it
            times = []
            for _ in range(20):
                started = time.monotonic()
                answer = answered(port, "127.0.0.9", 4)
                times.append(time.monotonic() - started if answer.startswith(b"HTTP/1.1 ") else None)
                time.sleep(0.2)
        finally:
            stop.set()
            for thread in attackers:
                thread.join(10)
        assert sum(t is not None and t <= 4 for t in times) >= 19, times


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
        assert time.monotonic() - started < 6, "within the headers' time (3 s)"


def test_a_client_counts_by_its_ipv4_address_or_its_ipv6_64() -> None:
    assert client_key("2001:db8:1:2::5") == client_key("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::5") != client_key("2001:db8:1:2::5")
    assert client_key("::ffff:10.0.0.1") == client_key("10.0.0.1") == "10.0.0.1"
    assert client_key("fe80::1%eth0") == "fe80::/64"


def guesses(kind: str, port: int, count: int, forwarded: bool) -> list[int]:
    """The statuses of ``count`` wrong credentials, each from a new X-Forwarded-For address when
    ``forwarded``: bearer tokens to MCP, the login form of the web view."""
    import httpx2

    base = f"http://127.0.0.1:{port}"
    statuses = []
    for n in range(count):
        headers = {"X-Forwarded-For": f"203.0.113.{n + 1}"} if forwarded else {}
        if kind == "mcp":
            headers |= {
                "Authorization": f"Bearer pgm_guess{n}",
                "Accept": "application/json, text/event-stream",
            }
            ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
            response = httpx2.post(f"{base}/mcp", json=ping, headers=headers, timeout=patience(30))
        else:
            headers |= {"Origin": base}
            response = httpx2.post(
                f"{base}/login", data={"token": f"pgm_guess{n}"}, headers=headers, timeout=patience(30)
            )
        statuses.append(response.status_code)
    return statuses


@pytest.mark.parametrize("kind", ["mcp", "ui"])
def test_a_forwarded_address_is_believed_only_from_a_proxy_the_server_names(
    kind: str, settings: Settings, tmp_path: Path
) -> None:
    """The credential throttle counts the address a client connects from: a guesser on loopback
    who sends a new X-Forwarded-For with each guess is still held (uvicorn believes loopback by
    default). With ``--forwarded-allow-ips`` naming the proxy, each forwarded address is its own."""
    allowed = {"mcp": 20, "ui": 10}[kind]  # the commands' default failures a minute
    with command_server(kind, settings, tmp_path / "direct.log", usual_file_limit) as (port, _):
        assert guesses(kind, port, allowed + 2, forwarded=True)[allowed:] == [429, 429]
    proxied = ("--forwarded-allow-ips", "127.0.0.1")
    with command_server(kind, settings, tmp_path / "proxied.log", usual_file_limit, *proxied) as (port, _):
        assert 429 not in guesses(kind, port, allowed + 2, forwarded=True)


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


def test_the_internals_the_servers_use_are_there() -> None:
    """The connection caps subclass uvicorn's HTTP protocol and the session cap reads the MCP SDK's
    table of sessions, which neither names in public: pyproject.toml pins both below their next
    release, and what the servers touch is there in the versions installed."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from uvicorn.protocols.http.h11_impl import H11Protocol

    protocol = inspect.getsource(H11Protocol)
    used = ("self.connections", "self.conn ", "self.transport", "self.loop", "self.client")
    assert [name for name in used if name not in protocol] == []
    assert {"connection_made", "connection_lost", "data_received", "on_response_complete"} <= set(vars(H11Protocol))
    assert "self._server_instances" in inspect.getsource(StreamableHTTPSessionManager)
