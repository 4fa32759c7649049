"""Markdown as blocks: headings keep a heading path, blank lines end paragraphs, fenced code
and tables are blocks of their own (the first step of chunking; see :mod:`hello_pgmem.rag.chunking`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
TABLE_LINE = re.compile(r"^[ \t]*\|")
TABLE_SEPARATOR = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
EMPTY_ROW = re.compile(r"^[\s|:\-]*$")
Counter = Callable[[str], int]


@dataclass
class Block:
    kind: str  # text | code | table
    text: str  # the block as it stands in the document, heading line included
    heading_path: tuple[str, ...]
    start: int
    end: int
    fence: str = ""  # the opening fence line of a code block
    head: str = ""  # the heading line at the top of the block, if any

    @property
    def body(self) -> str:
        """The block without its heading line."""
        return self.text[len(self.head) :].lstrip("\n") if self.head else self.text


def parse_blocks(markdown: str) -> list[Block]:
    """The blocks of ``markdown`` with their heading paths and character spans.

    Long because it is one pass over the lines: a state machine of fences, tables and paragraphs."""
    blocks: list[Block] = []
    headings: list[str] = []
    pending: tuple[int, str] | None = None  # a heading (start, line) to put at the top of the next block
    lines = markdown.splitlines(keepends=True)
    offset = 0
    i = 0

    def emit(kind: str, start: int, end: int, fence: str = "") -> None:
        nonlocal pending
        head = ""
        if pending is not None:
            start, head = pending
            pending = None
        text = markdown[start:end].strip("\n")
        if text.strip():
            blocks.append(Block(kind, text, tuple(headings), start, end, fence, head if text != head else ""))

    while i < len(lines):
        stripped = lines[i].rstrip("\n")
        fence = FENCE.match(stripped)
        heading = HEADING.match(stripped)
        if fence:
            marker = fence.group(1)
            start = offset
            offset += len(lines[i])
            i += 1
            while i < len(lines):
                inner = lines[i]
                offset += len(inner)
                i += 1
                if inner.strip().startswith(marker[0] * len(marker)) and inner.strip().strip(marker[0]) == "":
                    break
            emit("code", start, offset, stripped)
        elif heading:
            if pending is not None:
                emit("text", pending[0], offset)  # a heading with no body of its own
            level = len(heading.group(1))
            headings[:] = [*headings[: level - 1], heading.group(2).strip()]
            pending = (offset, stripped)
            offset += len(lines[i])
            i += 1
        elif TABLE_LINE.match(stripped):
            start = offset
            while i < len(lines) and TABLE_LINE.match(lines[i]):
                offset += len(lines[i])
                i += 1
            emit("table", start, offset)
        elif not stripped.strip():
            offset += len(lines[i])
            i += 1
        else:
            start = offset
            while i < len(lines):
                current = lines[i].rstrip("\n")
                if (
                    not current.strip()
                    or FENCE.match(current)
                    or HEADING.match(current)
                    or TABLE_LINE.match(current)
                ):
                    break
                offset += len(lines[i])
                i += 1
            emit("text", start, offset)
    if pending is not None:
        emit("text", pending[0], len(markdown))
    return blocks


# --------------------------------------------------------------------------- splitting
