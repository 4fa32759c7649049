"""The converter's own process: ``python -m hello_pgmem.rag._convert_server SOCKET PARENT``.

Started once by :mod:`hello_pgmem.rag.isolated` as a process of this module, never of the caller's
script, so converting a document runs no code of the caller's ``__main__``. It says "ready" on
stdout, then serves one conversion per connection on the Unix socket SOCKET: it is
single-threaded, so it forks a child per connection safely; the child sends its pid, lowers its
priority, caps its heap, address space and CPU time, converts and answers, then exits. It
leaves when its parent (pid PARENT) is gone.

A request is a line of JSON (``extension``, ``name``, ``size``, and the limits ``memory``,
``address``, ``cpu``, ``layout_cpu``, ``chars``) followed by ``size`` bytes; an answer is the child's pid (8
bytes), then a line of JSON ``{"ok": …, "payload": …}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.rag.convert import convert_bytes
from hello_pgmem.rag.unpacking import ARCHIVES, LAYOUT_TEXT_RUNS, check_archive, check_pdf

NICENESS = 10  # a worker yields the CPU to the process that asked for it


class OutOfCpu(BaseException):
    """The worker used its CPU time (SIGXCPU; the hard limit kills it a few seconds later). Not
    an Exception: a converter's ``except Exception`` must not turn it into an error of the file."""


def _out_of_cpu(signum: int, frame: Any) -> None:
    raise OutOfCpu


class LayoutTooSlow(BaseException):
    """A PDF's layout analysis used its CPU share (SIGPROF): the PDF is read without it."""


def _layout_too_slow(signum: int, frame: Any) -> None:
    raise LayoutTooSlow


def pdf_text(data: bytes, name: str, layout: bool, layout_cpu: float) -> str:
    """A PDF's text through MarkItDown's layout analysis for at most ``layout_cpu`` CPU seconds,
    else (or without ``layout``) run by run."""
    if layout:
        with contextlib.suppress(LayoutTooSlow):
            return _within_cpu(layout_cpu, lambda: convert_bytes(data, ".pdf", name))
    return convert_bytes(data, ".pdf", name, layout=False)


def _within_cpu(seconds: float, work: Callable[[], str]) -> str:
    """``work()``, interrupted by :class:`LayoutTooSlow` past ``seconds`` of this process's CPU."""
    signal.signal(signal.SIGPROF, _layout_too_slow)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        return work()
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)


def limit(request: dict[str, Any]) -> None:
    """The worker's bounds: priority, heap, address space, CPU seconds; and no stderr, where a
    worker that dies past its memory would leave the interpreter's last words on the caller's."""
    os.nice(NICENESS)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 2)
    os.close(quiet)
    memory, address, cpu = int(request["memory"]), int(request["address"]), int(request["cpu"])
    resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
    resource.setrlimit(resource.RLIMIT_AS, (address, address))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = int(usage.ru_utime + usage.ru_stime)  # what the fork inherited counts too
    resource.setrlimit(resource.RLIMIT_CPU, (used + cpu, used + cpu + 5))
    signal.signal(signal.SIGXCPU, _out_of_cpu)


def convert(request: dict[str, Any], data: bytes) -> dict[str, Any]:
    """The answer to one request, in the child."""
    name, extension = str(request["name"]), str(request["extension"])
    limit(request)
    try:
        if extension == ".pdf":
            layout = check_pdf(data, name) <= LAYOUT_TEXT_RUNS
            text = pdf_text(data, name, layout, float(request["layout_cpu"]))
        else:
            if extension in ARCHIVES:
                check_archive(data, name, unpack=True)
            text = convert_bytes(data, extension, name)
    except InvalidInputError as exc:
        return {"ok": False, "payload": exc.rule}
    except MemoryError:
        return {
            "ok": False,
            "payload": f"{name!r} needs more than {request['memory']} bytes of memory to convert",
        }
    except OutOfCpu:
        return {"ok": False, "payload": f"{name!r} took more than {request['cpu']}s of CPU to convert"}
    if len(text) > int(request["chars"]):
        return {"ok": False, "payload": f"{name!r} converts to more than {request['chars']} characters"}
    return {"ok": True, "payload": text}


def serve_one(conn: socket.socket) -> None:
    """In the child: read a request, send the pid, convert, answer."""
    stream = conn.makefile("rb")
    request = json.loads(stream.readline())
    data = stream.read(int(request["size"]))
    conn.sendall(os.getpid().to_bytes(8, "big"))
    answer = convert(request, data)
    conn.sendall(json.dumps(answer).encode("utf-8") + b"\n")


def main(path: str, parent: int) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reaped by the kernel
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(path)
        server.listen(16)
        server.settimeout(1.0)
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        while os.getppid() == parent:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            if os.fork() == 0:
                server.close()
                try:
                    serve_one(conn)
                finally:
                    os._exit(0)
            conn.close()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
