"""What a document unpacks to, counted before it is converted.

- Archives (docx, xlsx, pptx, epub, zip) are refused when their directory says they would unpack
  to more than ``MAX_UNPACKED_BYTES``, hold more than ``MAX_MEMBERS`` files, or hold a member that
  unpacks to more than ``MAX_RATIO`` times its packed size (a zip bomb is a few kilobytes that
  unpack to gigabytes); in the converter's worker every member is then unpacked as a stream and
  counted, so an archive whose directory understates its members stops at the same limit.
- A document's text is held to ``MAX_TEXT_CHARS``.
- A PDF is refused past ``MAX_PDF_PAGES`` pages, or when its pages' content streams decompress to
  more than ``MAX_PDF_CONTENT_BYTES``: counted in the worker as a stream, before any layout. The
  same pass counts each page's text runs (``Tj``, ``TJ``): a page of more than ``LAYOUT_TEXT_RUNS``
  is too dense for pdfminer's layout analysis, whose work grows with the square of the lines that
  overlap, and the document is read without it.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any

from hello_pgmem.core.errors import InvalidInputError

MAX_TEXT_CHARS = 5_000_000  # the text of one document, converted
ARCHIVES = {".docx", ".xlsx", ".pptx", ".epub", ".zip"}
MAX_UNPACKED_BYTES = 64 * 1024 * 1024  # a 5M-character document is far less as XML
MAX_RATIO = 200  # unpacked to packed, for a member of more than RATIO_FROM bytes
RATIO_FROM = 1024 * 1024
MAX_MEMBERS = 20_000
MAX_PDF_PAGES = 2_000
MAX_PDF_CONTENT_BYTES = 64 * 1024 * 1024  # the drawing of every page, decompressed
LAYOUT_TEXT_RUNS = 1_000  # a page's text runs past which layout analysis is skipped (400 overlapping: 2 s)
PIECE = 1024 * 1024
_TEXT_RUN = re.compile(rb"(?<![A-Za-z])T[jJ](?![A-Za-z0-9])")


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
                        while piece := stream.read(PIECE):
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


def check_pdf(
    data: bytes, name: str, pages: int = MAX_PDF_PAGES, content_bytes: int = MAX_PDF_CONTENT_BYTES
) -> int:
    """Refuse a PDF of more than ``pages`` pages, or whose pages' content decompresses to more
    than ``content_bytes`` (pdfminer walks the page tree lazily; nothing is laid out); the most
    text runs one page draws."""
    from pdfminer.pdfpage import PDFPage

    total = densest = 0
    try:
        for number, page in enumerate(PDFPage.get_pages(io.BytesIO(data)), 1):
            if number > pages:
                raise InvalidInputError("file_path", f"{name!r} has more than {pages} pages")
            runs = 0
            for stream in page.contents:
                for piece in _content(stream, content_bytes - total):
                    total += len(piece)
                    runs += len(_TEXT_RUN.findall(piece))
                if total > content_bytes:
                    raise InvalidInputError(
                        "file_path",
                        f"{name!r}: its pages' content decompresses to more than {content_bytes} bytes",
                    )
            densest = max(densest, runs)
    except InvalidInputError:
        raise
    except Exception as exc:  # pdfminer's own errors: the converter reports them the same way
        raise InvalidInputError("file_path", f"{name!r} is corrupt or cannot be converted: {exc}") from exc
    return densest


def _content(stream: Any, limit: int) -> Iterator[bytes]:
    """One content stream, decompressed, up to a little past ``limit``: a stream with only Flate
    compression is inflated piece by piece (never whole), any other through pdfminer."""
    from pdfminer.pdftypes import PDFStream, resolve1

    stream = resolve1(stream)
    if not isinstance(stream, PDFStream):
        return
    filters = [str(getattr(f, "name", f)) for f, _ in stream.get_filters()]
    if filters != ["FlateDecode"] or stream.rawdata is None:
        yield stream.get_data() or b""
        return
    inflate, size, left = zlib.decompressobj(), 0, stream.rawdata
    while left and size <= limit and not inflate.eof:
        try:
            piece = inflate.decompress(left, PIECE)
        except zlib.error:  # pdfminer reads what a damaged stream gives: so much counts
            return
        size += len(piece)
        left = inflate.unconsumed_tail
        yield piece
