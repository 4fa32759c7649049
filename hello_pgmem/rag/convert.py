"""Files to Markdown: plain text and Markdown read directly, everything else through MarkItDown.

Binary formats go to MarkItDown's converter for their extension and nothing else, so a corrupt
PDF is an error rather than its raw bytes read as text. Images and audio give what MarkItDown can
(metadata; a description when a chat model is configured). MarkItDown is the ``[docs]`` extra.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hello_pgmem.core.errors import ConfigurationError, InvalidInputError, UnsupportedFormatError
from hello_pgmem.rag.files import read_file

log = logging.getLogger(__name__)
# BeautifulSoup (MarkItDown's HTML reader) warns through logging about undecodable bytes; with no
# handler configured, Python's last-resort handler printed that on stderr. Records still reach
# the application's handlers.
logging.getLogger("bs4").addHandler(logging.NullHandler())

TEXT_EXTENSIONS = {".md", ".markdown", ".txt", ".text", ".rst", ".log"}
CODE_EXTENSIONS = {
    ".json": "json",
    ".xml": "xml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".py": "python",
    ".js": "javascript",
    ".ts": "typescript",
    ".sql": "sql",
    ".sh": "bash",
    ".java": "java",
    ".go": "go",
    ".rs": "rust",
    ".c": "c",
    ".cpp": "cpp",
}
CONVERTERS = {
    ".pdf": "PdfConverter",
    ".docx": "DocxConverter",
    ".xlsx": "XlsxConverter",
    ".xls": "XlsConverter",
    ".pptx": "PptxConverter",
    ".epub": "EpubConverter",
    ".html": "HtmlConverter",
    ".htm": "HtmlConverter",
    ".csv": "CsvConverter",
    ".ipynb": "IpynbConverter",
    ".msg": "OutlookMsgConverter",
}
MEDIA = {".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tiff", ".mp3", ".wav", ".m4a", ".flac"}
"""Pictures and recordings: text only from a chat model that describes them (MarkItDown's)."""
GENERAL = {".zip", *MEDIA}
SUPPORTED = TEXT_EXTENSIONS | set(CODE_EXTENSIONS) | set(CONVERTERS) | GENERAL

# Text whose Latin words run together: a PDF that places words by position without space glyphs
# reads as "Thisisversion0.21ofthe…" through pdfplumber; pdfminer's layout analysis spaces it.
RUN_TOGETHER_MEAN_WORD = 10.0
PDF_WORD_MARGINS = (0.1, 0.05, 0.03, 0.02)
"""Gaps (in ems) tried in turn as a word break; below 0.02 em letters of one word come apart."""
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'’.,;:-]*")


@dataclass(frozen=True)
class Converted:
    markdown: str
    source_path: str
    title: str
    format: str


def decode_text(data: bytes, name: str) -> str:
    """UTF-8 (with or without BOM), else GB18030 (Chinese), else a clear error."""
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise InvalidInputError("file_path", f"{name!r} is not UTF-8 or GB18030 text")


def mostly_text(text: str, sample: int = 100_000) -> bool:
    """Whether ``text`` reads as text: control characters at most 2 % of it (a program or an
    image read as a document is a quarter of them) and replacement characters at most a third
    (a page with a few bytes in the wrong encoding still reads)."""
    start = text[:sample]
    controls = sum(1 for ch in start if ord(ch) < 32 and ch not in "\t\n\r\f")
    return controls <= len(start) // 50 and start.count("\ufffd") <= len(start) // 3


def sniffed_text(data: bytes, sample: int = 8192) -> str | None:
    """The text of a file with no known extension when it reads as text (UTF-8 or GB18030, no
    NUL byte and almost no control characters in its first ``sample`` bytes), else None."""
    head = data[:sample]
    if b"\0" in head:
        return None
    try:
        text = decode_text(data, "")
    except InvalidInputError:
        return None
    start = text[:sample]
    controls = sum(1 for ch in start if ord(ch) < 32 and ch not in "\t\n\r\f")
    return text if controls <= len(start) // 100 else None


def _markitdown(llm: Any | None = None, model: str | None = None) -> Any:
    try:
        from markitdown import MarkItDown
    except ImportError as exc:
        raise ConfigurationError(
            "converting this format needs MarkItDown: pip install 'hello-pgmem[docs]'"
        ) from exc
    return MarkItDown(llm_client=llm, llm_model=model) if llm is not None else MarkItDown()


def read_document(file_path: str | Path, root: Path | None = None) -> bytes:
    """The bytes of a document to convert (only beneath ``root`` when given:
    :mod:`hello_pgmem.rag.files`); an InvalidInputError naming the file if it cannot be read."""
    path = Path(file_path).expanduser()
    if root is None and not path.exists():
        raise InvalidInputError("file_path", f"no such file: {str(file_path)!r}")
    if root is None and not path.is_file():
        raise InvalidInputError("file_path", f"{str(file_path)!r} is not a regular file")
    return read_file(path, root)


def convert_file(
    file_path: str | Path,
    *,
    llm_client: Any | None = None,
    llm_model: str | None = None,
    root: Path | None = None,
    data: bytes | None = None,
    owner: str | None = None,
) -> Converted:
    """Markdown for ``file_path`` (its bytes, when the caller has read them with
    :func:`read_document`); an InvalidInputError naming the file if it cannot be read. ``owner``
    is whom the conversion counts against (:mod:`hello_pgmem.rag.isolated`)."""
    path = Path(file_path).expanduser()
    name = path.name
    extension = path.suffix.lower()
    if data is None:
        data = read_document(path, root)
    if extension not in SUPPORTED:
        text = sniffed_text(data)
        if text is None:
            raise UnsupportedFormatError(
                "file_path",
                f"{name!r}: not text, and {extension or '(no extension)'!r} is no document format read here",
            )
        markdown = text
    elif extension in TEXT_EXTENSIONS:
        markdown = decode_text(data, name)
    elif extension in CODE_EXTENSIONS:
        markdown = f"```{CODE_EXTENSIONS[extension]}\n{decode_text(data, name).strip()}\n```\n"
    elif extension in MEDIA and llm_client is None:
        raise UnsupportedFormatError(
            "file_path",
            f"{name!r}: a picture or recording is read only when a chat model describes it (LLM_MODEL_ID)",
        )
    else:  # a converter may pass NUL characters through, which no text column holds
        markdown = _convert_binary(path, data, extension, llm_client, llm_model, owner).replace("\x00", "")
    if not markdown.strip():
        raise InvalidInputError("file_path", f"{name!r}: no text could be extracted")
    if not mostly_text(markdown):
        raise UnsupportedFormatError(
            "file_path",
            f"{name!r}: binary data, not text (its {extension or 'missing'} extension says otherwise)",
        )
    return Converted(
        markdown=markdown.replace("\r\n", "\n"),
        source_path=str(path),
        title=path.stem,
        format=extension.lstrip("."),
    )


def _convert_binary(
    path: Path, data: bytes, extension: str, llm: Any | None, model: str | None, owner: str | None
) -> str:
    """A binary document in a killable worker process; a picture or a recording that a chat
    model is to describe in this one (its client cannot cross to another process)."""
    if llm is not None and extension in GENERAL - {".zip"}:
        return convert_bytes(data, extension, path.name, llm, model)
    from hello_pgmem.rag.isolated import convert_isolated

    return convert_isolated(data, extension, path.name, owner=owner)


@contextlib.contextmanager
def converter_errors(name: str) -> Iterator[None]:
    """A converter library's own error, as the file's (a memory error goes on as it is)."""
    try:
        yield
    except MemoryError:
        raise
    except Exception as exc:  # every converter raises its own library's errors
        raise InvalidInputError(
            "file_path",
            f"{name!r} is corrupt or cannot be converted: {type(exc).__name__}: {str(exc)[:200]}",
        ) from exc


def convert_bytes(
    data: bytes,
    extension: str,
    name: str,
    llm: Any | None = None,
    model: str | None = None,
    *,
    layout: bool = True,
) -> str:
    """MarkItDown's text for a binary document's bytes, with the converter of its extension; a PDF
    without ``layout`` is read run by run (:func:`unlaid_pdf_text`)."""
    if extension == ".pdf" and not layout:
        log.info("%s: read run by run, without layout analysis", name)
        return unlaid_pdf_text(data, name)
    engine = _markitdown(llm, model)
    from markitdown import StreamInfo, converters

    info = StreamInfo(extension=extension, filename=name)
    with converter_errors(name):
        if extension in CONVERTERS:
            converter = getattr(converters, CONVERTERS[extension])()
            result = converter.convert(io.BytesIO(data), info)
        else:
            result = engine.convert_stream(io.BytesIO(data), stream_info=info)
    text = str(result.text_content or "")
    if extension == ".pdf" and runs_together(text):
        log.info("%s: words run together in the PDF's text; extracted again with pdfminer's layout", name)
        return spaced_pdf_text(data) or text
    return text


def unlaid_pdf_text(data: bytes, name: str) -> str:
    """A PDF's text without pdfminer's layout analysis: its text runs (``Tj``, ``TJ``) in the order
    the pages draw them, a run on the baseline of the one before it after a space, any other on a
    new line; work linear in the runs, however they overlap."""
    from pdfminer.converter import TextConverter
    from pdfminer.layout import LTAnno, LTChar
    from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
    from pdfminer.pdfpage import PDFPage

    class RunByRun(TextConverter):
        baseline: float | None = None

        def begin_page(self, *args: Any, **kwargs: Any) -> None:
            super().begin_page(*args, **kwargs)
            self.baseline = None

        def render_string(self, *args: Any, **kwargs: Any) -> None:
            drawn: list[Any] = self.cur_item._objs  # the page's items so far, in order
            start = len(drawn)
            super().render_string(*args, **kwargs)
            chars = [item for item in drawn[start:] if isinstance(item, LTChar)]
            if not chars:
                return
            first = chars[0]
            if self.baseline is not None:
                same_line = abs(first.y0 - self.baseline) < max(first.size, 1.0) / 2
                drawn.insert(start, LTAnno(" " if same_line else "\n"))
            self.baseline = first.y0

        def end_page(self, *args: Any, **kwargs: Any) -> None:
            page: list[Any] = self.cur_item._objs
            page.append(LTAnno("\n"))
            super().end_page(*args, **kwargs)

    out = io.StringIO()
    with converter_errors(name):
        resources = PDFResourceManager()
        device = RunByRun(resources, out, laparams=None)
        interpreter = PDFPageInterpreter(resources, device)
        for page in PDFPage.get_pages(io.BytesIO(data)):
            interpreter.process_page(page)
    return out.getvalue()


def spaced_pdf_text(data: bytes) -> str | None:
    """A PDF's text through pdfminer's layout analysis, with the widest word margin (in ems) whose
    words do not run together: a PDF that sets words apart by less than pdfminer's default tenth of
    an em gets its spaces back, and the widest margin that works splits the fewest words."""
    from pdfminer.high_level import extract_text
    from pdfminer.layout import LAParams

    for margin in PDF_WORD_MARGINS:
        spaced = extract_text(io.BytesIO(data), laparams=LAParams(word_margin=margin))
        if not runs_together(spaced):
            return spaced
    return None


def runs_together(text: str, sample: int = 200_000) -> bool:
    """Whether the Latin words of ``text`` run together (a mean word of over 10 letters, where
    English averages 5); text with too few Latin words (Chinese, numbers) never does."""
    words = _LATIN_WORD.findall(text[:sample])
    if len(words) < 20:
        return False
    return sum(map(len, words)) / len(words) > RUN_TOGETHER_MEAN_WORD
