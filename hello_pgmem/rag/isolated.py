"""Binary documents converted where a hostile file can do no harm: a checked archive, a process
that a timeout kills, memory capped.

- Archives (docx, xlsx, pptx, epub, zip) are refused before conversion when their directory says
  they would unpack to more than ``MAX_UNPACKED_BYTES``, hold more than ``MAX_MEMBERS`` files, or
  hold a member that unpacks to more than ``MAX_RATIO`` times its packed size (a zip bomb is a
  few kilobytes that unpack to gigabytes); in the worker, before conversion, every member is
  unpacked as a stream and counted, so an archive whose directory understates its members stops
  at the same limit.
- A PDF of more than ``MAX_PDF_PAGES`` pages is refused (counted in the worker, before its text
  is extracted); the Markdown a document gives is held to the ingest's character limit.
- The converter runs in a process of its own, forked from a single-threaded converter process
  that has MarkItDown loaded already (a few milliseconds a file, safe beside the caller's
  threads). That process is ``python -m hello_pgmem.rag._convert_server``, started once and
  leaving with the caller: it runs no code of the caller's script (multiprocessing would import
  the caller's ``__main__`` again in every worker). A worker's address space is capped at
  ``MAX_WORKER_BYTES``; past ``timeout`` seconds, or the caller's call deadline, it is killed, so a
  file that makes a parser spin costs at most that.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from threading import Lock

from hello_pgmem.core.deadline import remaining_ms
from hello_pgmem.core.errors import InvalidInputError

log = logging.getLogger(__name__)

ARCHIVES = {".docx", ".xlsx", ".pptx", ".epub", ".zip"}
MAX_UNPACKED_BYTES = 64 * 1024 * 1024  # a 5M-character document is far less as XML
MAX_RATIO = 200  # unpacked to packed, for a member of more than RATIO_FROM bytes
RATIO_FROM = 1024 * 1024
MAX_MEMBERS = 20_000
MAX_PDF_PAGES = 2_000
MAX_WORKER_BYTES = 4 * 1024**3
DEFAULT_TIMEOUT_S = 120.0
HANDOVER_S = 10.0
"""How long the converter may take to take a request and name its worker (not the conversion)."""


def check_archive(data: bytes, name: str, *, unpack: bool = False) -> None:
    """Refuse an archive that would unpack to too much: by its own directory of members, and with
    ``unpack`` by unpacking every member as a stream and counting what comes out."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
            _check_directory(members, name)
            if unpack:
                total = 0
                for member in members:
                    with archive.open(member) as stream:
                        while piece := stream.read(1024 * 1024):
                            total += len(piece)
                            if total > MAX_UNPACKED_BYTES:
                                raise InvalidInputError(
                                    "file_path", f"{name!r} unpacks to more than {MAX_UNPACKED_BYTES} bytes"
                                )
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError) as exc:
        raise InvalidInputError("file_path", f"{name!r} is corrupt or cannot be converted: {exc}") from exc


def _check_directory(members: list[zipfile.ZipInfo], name: str) -> None:
    if len(members) > MAX_MEMBERS:
        raise InvalidInputError("file_path", f"{name!r} holds more than {MAX_MEMBERS} files")
    unpacked = sum(member.file_size for member in members)
    if unpacked > MAX_UNPACKED_BYTES:
        raise InvalidInputError(
            "file_path", f"{name!r} would unpack to {unpacked} bytes, more than {MAX_UNPACKED_BYTES}"
        )
    for member in members:
        if member.file_size > RATIO_FROM and member.file_size > MAX_RATIO * max(member.compress_size, 1):
            raise InvalidInputError(
                "file_path",
                f"{name!r} holds {member.filename!r}, which would unpack to more than {MAX_RATIO} times "
                "its packed size",
            )


def check_pages(data: bytes, name: str, limit: int = MAX_PDF_PAGES) -> None:
    """Refuse a PDF of more than ``limit`` pages (pdfminer walks the page tree lazily)."""
    from pdfminer.pdfpage import PDFPage

    try:
        for number, _ in enumerate(PDFPage.get_pages(io.BytesIO(data)), 1):
            if number > limit:
                raise InvalidInputError("file_path", f"{name!r} has more than {limit} pages")
    except InvalidInputError:
        raise
    except Exception as exc:  # pdfminer's own errors: the converter reports them the same way
        raise InvalidInputError("file_path", f"{name!r} is corrupt or cannot be converted: {exc}") from exc


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


def convert_isolated(data: bytes, extension: str, name: str, timeout: float = DEFAULT_TIMEOUT_S) -> str:
    """The Markdown of a binary document, converted in a killable, memory-capped process."""
    if extension in ARCHIVES:
        check_archive(data, name)  # by its directory; the worker unpacks it as a stream
    left = remaining_ms()
    limit = timeout if left is None else min(timeout, left / 1000)
    request = {"extension": extension, "name": name, "memory": MAX_WORKER_BYTES, "size": len(data)}
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
    if not line:  # the worker died without an answer: the memory cap, a crash
        raise InvalidInputError("file_path", f"{name!r} could not be converted: the converter died")
    answer = json.loads(line)
    if not answer["ok"]:
        raise InvalidInputError("file_path", str(answer["payload"]))
    return str(answer["payload"])
