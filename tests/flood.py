"""Connections that send half a request and wait: the attack on the servers' connection caps."""

from __future__ import annotations

import socket
import threading


def answered(port: int, source: str, seconds: float, path: str = "/login") -> bytes:
    """The first bytes of the answer to a plain GET from ``source`` (b"" when none came)."""
    with socket.socket() as sock:
        sock.settimeout(seconds)
        sock.bind((source, 0))
        try:
            sock.connect(("127.0.0.1", port))
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            return sock.recv(64)
        except OSError:
            return b""


def half_sent(port: int, count: int, source: str = "127.0.0.1") -> list[socket.socket]:
    """``count`` connections from ``source`` that each send half a request's headers and wait."""
    opened = []
    for _ in range(count):
        sock = socket.socket()
        sock.settimeout(0.5)
        try:
            sock.bind((source, 0))
            sock.connect(("127.0.0.1", port))
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        except OSError:
            pass
        opened.append(sock)
    return opened


def closed(sock: socket.socket) -> bool:
    """Whether the server has closed ``sock`` (without waiting)."""
    try:
        sock.settimeout(0)
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def hold_half_sent(port: int, source: str, stop: threading.Event, count: int = 64) -> None:
    """Keep ``count`` half-sent requests of ``source`` open until ``stop``, re-opening each one
    the server closes."""
    held: list[socket.socket] = []
    while not stop.is_set():
        alive = []
        for sock in held:
            if closed(sock):
                sock.close()
            else:
                alive.append(sock)
        held = alive + half_sent(port, count - len(alive), source)
        stop.wait(0.2)
    for sock in held:
        sock.close()
