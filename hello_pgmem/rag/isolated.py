"""Binary documents converted where a hostile file can do no harm: a process that a time limit
kills, its memory and CPU capped, and a bounded number of them at once.

- What a document unpacks to is counted first (:mod:`hello_pgmem.rag.unpacking`).
- The converter runs in a process of its own, forked from a small single-threaded converter
  process (safe beside the caller's threads; the worker loads MarkItDown itself). That process
  is ``python -m hello_pgmem.rag._convert_server``, started once and leaving with the caller: it
  runs no code of the caller's script (multiprocessing would import the caller's ``__main__``
  again in every worker).
- A worker runs at a lower priority than the caller (``nice`` 10), with ``WORKER_CPU_S`` seconds of
  CPU, ``WORKER_MEMORY_BYTES`` of heap and ``WORKER_ADDRESS_BYTES`` of address space; past
  ``timeout`` seconds, or the caller's call deadline, it is killed. Text longer than the ingest's
  character limit is refused in the worker, never sent.
- At most ``MAX_CONVERSIONS`` workers run at once in one process, and one per owner (the user a
  knowledge base works for): a conversion waits its turn up to ``QUEUE_WAIT_S`` seconds (or the
  call's deadline), then fails as busy. Owners take turns: a freed slot goes to the waiting owner
  served longest ago. Two hostile files at once leave the rest of the machine
  to the other calls.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from threading import Condition, Lock

from hello_pgmem.core.deadline import remaining_ms
from hello_pgmem.core.errors import BusyError, InvalidInputError
from hello_pgmem.rag.unpacking import ARCHIVES, MAX_TEXT_CHARS, check_archive

log = logging.getLogger(__name__)

WORKER_CPU_S = 30
LAYOUT_CPU_S = 5
"""CPU seconds a PDF's layout analysis may take; past them the PDF is read run by run instead
(work linear in its text, whatever the layout): a PDF built to spin the layout holds a slot for
seconds, not for its whole CPU time."""
WORKER_MEMORY_BYTES = 1024**3  # the heap (RLIMIT_DATA): what the worker allocates
WORKER_ADDRESS_BYTES = 4 * 1024**3  # all its mappings (RLIMIT_AS), libraries included
MAX_CONVERSIONS = max(1, (os.cpu_count() or 2) // 2)
CONVERSIONS_PER_OWNER = 1
QUEUE_WAIT_S = 60.0
DEFAULT_TIMEOUT_S = 600.0
"""A conversion outside any call's deadline is killed after this long: its CPU time (``WORKER_CPU_S``)
bounds its work, and at ``nice`` 10 on a busy machine that work can take minutes of wall time."""
HANDOVER_S = 10.0
"""How long the converter may take to take a request and name its worker (not the conversion)."""


class _ConverterProcess:
    """The converter process of this process: started on first use (again when it has died)."""

    def __init__(self) -> None:
        self._lock = Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self.path = ""

    def socket_path(self) -> str:
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._start()
            return self.path

    def _start(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="pgmem-convert-")
        self.path = os.path.join(self._folder.name, "socket")
        command = [sys.executable, "-m", "hello_pgmem.rag._convert_server", self.path, str(os.getpid())]
        self._process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, close_fds=True
        )
        assert self._process.stdout is not None
        if self._process.stdout.readline().strip() != b"ready":
            self._process.kill()
            raise InvalidInputError("file_path", "the document converter could not start")
        atexit.register(self._process.kill)


_converter = _ConverterProcess()


class ConversionSlots:
    """Conversions under way in this process: at most ``total``, and ``per_owner`` of one owner.
    A freed slot goes to the waiting owner served longest ago (then to the earliest waiter): an
    owner who sends files back to back waits behind the others' turns."""

    def __init__(self, total: int, per_owner: int) -> None:
        self.total = total
        self.per_owner = per_owner
        self._running: Counter[str] = Counter()
        self._served: dict[str, int] = {}  # owner -> the turn it last took
        self._waiting: list[tuple[str, int]] = []  # (owner, ticket)
        self._turns = itertools.count(1)
        self._changed = Condition()

    def _full(self, owner: str) -> bool:
        return self._running[owner] >= self.per_owner or sum(self._running.values()) >= self.total

    def _next(self) -> tuple[str, int] | None:
        """The waiter whose turn it is: among those whose owner may start one more, the owner
        served longest ago (never: first), then the earliest."""
        ready = [w for w in self._waiting if self._running[w[0]] < self.per_owner]
        return min(ready, key=lambda w: (self._served.get(w[0], 0), w[1]), default=None)

    @contextlib.contextmanager
    def taken(self, owner: str | None, wait_s: float, name: str) -> Iterator[None]:
        """A slot for one conversion of ``owner``, waited for up to ``wait_s`` seconds."""
        key = "" if owner is None else owner
        until = time.monotonic() + wait_s
        with self._changed:
            me = (key, next(self._turns))
            self._waiting.append(me)
            try:
                while self._full(key) or self._next() != me:
                    left = until - time.monotonic()
                    if left <= 0:
                        raise BusyError(
                            f"file_path: {name!r} was not converted: the converter is busy ({self.total} "
                            f"conversions at once, {self.per_owner} a user); try again later"
                        )
                    self._changed.wait(left)
            finally:
                self._waiting.remove(me)
                self._changed.notify_all()  # the next waiter may be another's now
            self._running[key] += 1
            self._served[key] = next(self._turns)
            if len(self._served) > 10_000:  # owners long gone lose their place, not their turn
                self._served = {k: v for k, v in self._served.items() if self._running[k]}
        try:
            yield
        finally:
            with self._changed:
                self._running[key] -= 1
                self._changed.notify_all()


slots = ConversionSlots(MAX_CONVERSIONS, CONVERSIONS_PER_OWNER)


def convert_isolated(
    data: bytes, extension: str, name: str, timeout: float = DEFAULT_TIMEOUT_S, owner: str | None = None
) -> str:
    """The Markdown of a binary document, converted in a killable, capped worker process when a
    slot is free for ``owner`` (waiting at most ``QUEUE_WAIT_S`` and within the call's deadline)."""
    if extension in ARCHIVES:
        check_archive(data, name)  # by its directory; the worker unpacks it as a stream
    started = time.monotonic()
    left = remaining_ms()
    limit = timeout if left is None else min(timeout, left / 1000)
    with slots.taken(owner, min(QUEUE_WAIT_S, limit), name):
        return _convert(data, extension, name, limit - (time.monotonic() - started))


def _convert(data: bytes, extension: str, name: str, limit: float) -> str:
    """One conversion in a worker, killed past ``limit`` seconds."""
    request = {
        "extension": extension,
        "name": name,
        "size": len(data),
        "memory": WORKER_MEMORY_BYTES,
        "address": WORKER_ADDRESS_BYTES,
        "cpu": WORKER_CPU_S,
        "layout_cpu": LAYOUT_CPU_S,
        "chars": MAX_TEXT_CHARS,
    }
    started = time.monotonic()
    path = _converter.socket_path()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn, conn.makefile("rb") as stream:
        conn.settimeout(HANDOVER_S)  # the worker reads the request and names itself at once
        conn.connect(path)
        conn.sendall(json.dumps(request).encode("utf-8") + b"\n" + data)
        pid = int.from_bytes(stream.read(8) or b"\0", "big")
        try:
            conn.settimeout(max(limit - (time.monotonic() - started), 0.001))
            line = stream.readline()
        except TimeoutError as exc:
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            slow = f"{name!r} took longer than {limit:.0f}s to convert"
            raise InvalidInputError("file_path", slow) from exc
    if not line:  # the worker died without an answer: a crash, or past a limit it could not report
        mib = WORKER_MEMORY_BYTES >> 20
        stopped = (
            f"the converter stopped (past its {mib} MiB of memory or {WORKER_CPU_S} s of CPU, or it crashed)"
        )
        raise InvalidInputError("file_path", f"{name!r} could not be converted: {stopped}")
    answer = json.loads(line)
    if not answer["ok"]:
        raise InvalidInputError("file_path", str(answer["payload"]))
    return str(answer["payload"])
