"""What alone exceeds a chunk's room, split: a paragraph between sentences, then clauses, then
characters; a code block between lines, each piece fenced again; a table between rows, with its
header when it fits (the second step of chunking; see :mod:`hello_pgmem.rag.chunking`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from hello_pgmem.rag.blocks import EMPTY_ROW, FENCE, TABLE_SEPARATOR, Block, Counter

SENTENCE_END = re.compile(r"(?<=[。！？；!?;\n])|(?<=[.](?=\s))")
CLAUSE_END = re.compile(r"(?<=[，、,：:])")
CELL = re.compile(r"(?<!\\)\|")


def _fitting_prefix(text: str, start: int, limit: int, count: Counter) -> int:
    """The length of the longest ``text[start:start + n]`` within ``limit`` tokens (at least 1).

    A window doubles until it holds more than ``limit`` tokens, then a binary search finds the
    cut: each part costs about its own length times a logarithm, never the rest of the text.
    """
    rest = len(text) - start
    size = min(rest, max(1, limit))
    while size < rest and count(text[start : start + size]) <= limit:
        size = min(rest, size * 2)
    if count(text[start : start + size]) <= limit:
        return size
    low, high = 1, size - 1
    while low < high:
        middle = (low + high + 1) // 2
        if count(text[start : start + middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    return low


def _hard_split(text: str, limit: int, count: Counter) -> list[str]:
    """``text`` cut into parts of at most ``limit`` tokens: at a space when there is one, else
    between characters."""
    parts: list[str] = []
    start = 0
    while start < len(text):
        cut = start + _fitting_prefix(text, start, limit, count)
        if cut < len(text):
            space = text.rfind(" ", start, cut + 1)
            cut = space + 1 if space > start else cut
        parts.append(text[start:cut])
        start = cut
    return parts


def split_text(text: str, limit: int, count: Counter) -> list[str]:
    """``text`` split between sentences, then clauses, then characters, into parts <= ``limit``.

    Consecutive sentences (or clauses) are gathered while the sum of their counts fits: they
    meet at punctuation, which ends a token, so the sum is the count of the joined text.
    """
    pieces: list[str] = []

    def split(part: str, patterns: list[re.Pattern[str]], size: int | None = None) -> None:
        if (count(part) if size is None else size) <= limit:
            if part.strip():
                pieces.append(part.strip())
            return
        if not patterns:
            pieces.extend(p.strip() for p in _hard_split(part, limit, count) if p.strip())
            return
        parts = [p for p in patterns[0].split(part) if p]
        if len(parts) == 1:
            split(part, patterns[1:])
            return
        current: list[str] = []
        current_size = 0
        for piece in parts:
            piece_size = count(piece)
            if current and current_size + piece_size > limit:
                split("".join(current), patterns[1:], current_size)
                current, current_size = [], 0
            current.append(piece)
            current_size += piece_size
        split("".join(current), patterns[1:], current_size)

    split(text, [SENTENCE_END, CLAUSE_END])
    return pieces


def _pack_lines(lines: list[str], wrap: Callable[[list[str]], str], limit: int, count: Counter) -> list[str]:
    """Consecutive lines packed into ``wrap``-ped pieces of at most ``limit`` tokens, counted as
    the wrapper's own tokens, the lines' and the joints' between them (a line break, a cell
    border), so that no piece is counted twice."""
    pieces: list[str] = []
    current: list[str] = []
    base = count(wrap([]))
    joint = count(wrap(["x", "x"])) - count(wrap(["x"])) - count("x")
    size = base
    for line in lines:
        line_size = count(line) + (joint if current else 0)
        if current and size + line_size > limit:
            pieces.append(wrap(current))
            current, size = [], base
            line_size -= joint
        current.append(line)
        size += line_size
    if current:
        pieces.append(wrap(current))
    return pieces


def _split_code(body: str, fence: str, limit: int, count: Counter) -> list[str]:
    """A fenced code block between lines, every piece fenced again."""
    lines = body.splitlines()
    opening, lines = lines[0], lines[1:]
    marker = FENCE.match(fence or opening)
    closing_marker = marker.group(1) if marker else "```"
    if lines and _closes(lines[-1], closing_marker):
        lines = lines[:-1]

    def wrap(rows: list[str]) -> str:
        return "\n".join([opening, *rows, closing_marker])

    room = max(1, limit - count(wrap([])))
    fitted: list[str] = []
    for line in lines:
        fitted += _hard_split(line, room, count) if count(wrap([line])) > limit else [line]
    return _pack_lines(fitted, wrap, limit, count)


def _cells(row: str) -> list[str]:
    inner = row.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip() for cell in CELL.split(inner)]


def _split_row(row: str, limit: int, count: Counter) -> list[str]:
    """A table row too long for a piece, cut between cells (a cell between characters)."""
    cells: list[str] = []
    for cell in _cells(row):
        cells += _hard_split(cell, max(1, limit - 4), count) if count(f"| {cell} |") > limit else [cell]
    return _pack_lines(cells, lambda group: "| " + " | ".join(group) + " |", limit, count)


def _split_table(body: str, limit: int, count: Counter) -> list[str]:
    """A table between rows; the column header leads every piece when it is narrow enough."""
    lines = [line for line in body.splitlines() if line.strip()]
    has_header = len(lines) > 2 and TABLE_SEPARATOR.match(lines[1]) is not None
    header = lines[:2] if has_header else []
    rows = [line for line in lines[len(header) :] if not EMPTY_ROW.match(line)]
    if header and count("\n".join(header)) > limit // 2:
        rows, header = [line for line in header if not EMPTY_ROW.match(line)] + rows, []
    room = limit - (count("\n".join(header)) + 1 if header else 0)
    fitted: list[str] = []
    for row in rows:
        fitted += _split_row(row, room, count) if count(row) > room else [row]
    return _pack_lines(fitted, lambda group: "\n".join(header + group), limit, count)


def _closes(line: str, opening: str) -> bool:
    """Whether ``line`` closes a fence opened by ``opening`` (same character, at least as long)."""
    stripped = line.strip()
    return bool(stripped) and set(stripped) == {opening[0]} and len(stripped) >= len(opening)


def _closed(block: Block) -> Block:
    """A code block the document left open (at its end) with its closing fence added."""
    lines = block.body.splitlines()
    marker = FENCE.match(lines[0])
    if marker is None or (len(lines) > 1 and _closes(lines[-1], marker.group(1))):
        return block
    return replace(block, text=f"{block.text}\n{marker.group(1)}")


def split_block(block: Block, limit: int, count: Counter) -> list[Block]:
    """The block itself when it fits ``limit``, else its pieces (heading line on the first)."""
    if block.kind == "code":
        block = _closed(block)
    if count(block.text) <= limit:
        return [block]
    head = block.head
    room = limit - (count(head) + 1 if head else 0)
    if room < limit // 2:  # a heading this long goes into a piece of its own
        pieces = [head, *_split_body(block, limit, count)] if head else _split_body(block, limit, count)
    else:
        pieces = _split_body(block, room if head else limit, count)
        if head and pieces:
            pieces[0] = f"{head}\n{pieces[0]}"
    return [replace(block, text=piece, head="") for piece in pieces if piece.strip()]


def _split_body(block: Block, limit: int, count: Counter) -> list[str]:
    body = block.body
    if block.kind == "code":
        return _split_code(body, block.fence, limit, count)
    if block.kind == "table":
        return _split_table(body, limit, count)
    return split_text(body, limit, count)


# --------------------------------------------------------------------------- packing
