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
- The converter runs in a process of its own, forked from a single-threaded fork server that has
  MarkItDown loaded already (a few milliseconds a file, safe beside the caller's threads). Its
  address space is capped at ``MAX_WORKER_BYTES``; past ``timeout`` seconds, or the caller's call
  deadline, it is killed, so a file that makes a parser spin costs at most that.
"""

from __future__ import annotations

import io
import logging
import multiprocessing
import resource
import zipfile
from multiprocessing.connection import Connection
from threading import Lock
from typing import Any

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

_lock = Lock()
_context: Any = None


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


def _fork_server() -> Any:
    global _context
    with _lock:
        if _context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(["hello_pgmem.rag.convert", "markitdown"])
            _context = context
        return _context


def _work(out: Connection, data: bytes, extension: str, name: str, memory: int) -> None:
    """In the worker: cap memory, convert, send back (True, text) or (False, message)."""
    from hello_pgmem.rag.convert import convert_bytes

    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    try:
        if extension == ".pdf":
            check_pages(data, name)
        if extension in ARCHIVES:
            check_archive(data, name, unpack=True)
        out.send((True, convert_bytes(data, extension, name)))
    except InvalidInputError as exc:
        out.send((False, exc.rule))
    except MemoryError:
        out.send((False, f"{name!r} needs more than {memory} bytes of memory to convert"))
    finally:
        out.close()


def convert_isolated(data: bytes, extension: str, name: str, timeout: float = DEFAULT_TIMEOUT_S) -> str:
    """The Markdown of a binary document, converted in a killable, memory-capped process."""
    if extension in ARCHIVES:
        check_archive(data, name)
    left = remaining_ms()
    limit = timeout if left is None else min(timeout, left / 1000)
    context = _fork_server()
    received, sent = context.Pipe(duplex=False)
    worker = context.Process(target=_work, args=(sent, data, extension, name, MAX_WORKER_BYTES), daemon=True)
    worker.start()
    sent.close()
    try:
        if not received.poll(limit):
            raise InvalidInputError("file_path", f"{name!r} took longer than {limit:.0f}s to convert")
        ok, payload = received.recv()
    except EOFError as exc:  # the worker died without an answer: the memory cap, a crash
        raise InvalidInputError("file_path", f"{name!r} could not be converted: the converter died") from exc
    finally:
        if worker.is_alive():
            worker.kill()
        worker.join()
        received.close()
    if not ok:
        raise InvalidInputError("file_path", str(payload))
    return str(payload)
