"""The converter's own process: ``python -m hello_pgmem.rag._convert_server SOCKET PARENT``.

Started once by :mod:`hello_pgmem.rag.isolated` as a process of this module, never of the caller's
script, so converting a document runs no code of the caller's ``__main__``. It loads MarkItDown,
says "ready" on stdout, then serves one conversion per connection on the Unix socket SOCKET: it is
single-threaded, so it forks a child per connection safely; the child sends its pid, caps its
address space, converts and answers, then exits. It leaves when its parent (pid PARENT) is gone.

A request is a line of JSON (``extension``, ``name``, ``memory``, ``size``) followed by ``size``
bytes; an answer is the child's pid (8 bytes), then a line of JSON ``{"ok": …, "payload": …}``.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import sys
from typing import Any

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.rag.convert import convert_bytes
from hello_pgmem.rag.isolated import ARCHIVES, check_archive, check_pages


def convert(request: dict[str, Any], data: bytes) -> dict[str, Any]:
    """The answer to one request, in the child."""
    name, extension = str(request["name"]), str(request["extension"])
    memory = int(request["memory"])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    try:
        if extension == ".pdf":
            check_pages(data, name)
        if extension in ARCHIVES:
            check_archive(data, name, unpack=True)
        return {"ok": True, "payload": convert_bytes(data, extension, name)}
    except InvalidInputError as exc:
        return {"ok": False, "payload": exc.rule}
    except MemoryError:
        return {"ok": False, "payload": f"{name!r} needs more than {memory} bytes of memory to convert"}


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
