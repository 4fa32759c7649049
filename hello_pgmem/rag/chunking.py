"""Heading-aware chunking of Markdown.

1. Parse: headings (``#`` … ``######``, outside code fences) maintain a heading path; blank
   lines end paragraphs; fenced code blocks and tables are blocks of their own. A heading line is
   kept at the top of the block that follows it (its ``head``).
2. Split what alone exceeds the room a chunk leaves (``chunk_size - chunk_overlap`` tokens):
   - a paragraph between sentences, then clauses, then hard by characters;
   - a code block between lines, each piece fenced again with the block's own opening and
     closing fence (so fences are balanced in every chunk), a line too long for a piece cut
     into fenced parts;
   - a table between rows; each piece starts with the column header (the header row and its
     separator) when the header takes at most half the room, otherwise the header is not repeated
     (a header that wide would make every row its own chunk and multiply the text); a row too
     long for a piece is cut between cells, a cell between characters; rows of empty cells only
     (``| | | |``, generated layout tables) carry nothing and are dropped.
   A block's heading line goes with its first piece only.
3. Pack: pieces go into chunks of at most ``chunk_size`` tokens; each chunk after the first starts
   with up to ``chunk_overlap`` tokens from the end of the previous one (whole pieces, or the last
   sentences of a paragraph).

Every chunk is within ``chunk_size`` tokens, and the chunks hold at most about three times the
text of the input (header repetition and overlap each add at most about the input again).
Chinese needs no spaces: sentences end at 。！？；, clauses at ，、, and tokens are counted per
character. Every chunk keeps its heading path, position, character span and token count.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Annotated

from pydantic import Field

from hello_pgmem.core.deadline import check_deadline
from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.text import count_tokens

HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
TABLE_LINE = re.compile(r"^[ \t]*\|")
TABLE_SEPARATOR = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
EMPTY_ROW = re.compile(r"^[\s|:\-]*$")
SENTENCE_END = re.compile(r"(?<=[。！？；!?;\n])|(?<=[.](?=\s))")
CLAUSE_END = re.compile(r"(?<=[，、,：:])")
CELL = re.compile(r"(?<!\\)\|")

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


@dataclass
class Chunk:
    content: str
    heading_path: list[str]
    start: int
    end: int
    tokens: int
    position: int = 0
    blocks: list[Block] = field(default_factory=list, repr=False)


def parse_blocks(markdown: str) -> list[Block]:
    """The blocks of ``markdown`` with their heading paths and character spans."""
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


def _overlap(blocks: list[Block], budget: int, count: Counter) -> list[Block]:
    """The end of a chunk to repeat at the start of the next: whole blocks, or last sentences."""
    if budget <= 0:
        return []
    taken: list[Block] = []
    used = 0
    for block in reversed(blocks):
        size = count(block.text)
        if used + size <= budget:
            taken.insert(0, block)
            used += size
            continue
        if block.kind == "text" and not taken:
            sentences = [s for s in SENTENCE_END.split(block.text) if s.strip()]
            kept: list[str] = []
            tail_size = 0
            for sentence in reversed(sentences):
                tail_size += count(sentence)
                if tail_size > budget:
                    break
                kept.append(sentence)
            tail = "".join(reversed(kept))
            if tail.strip():
                start = block.end - len(tail)
                taken.insert(
                    0, Block("text", tail.strip(), block.heading_path, max(block.start, start), block.end)
                )
        break
    return taken


MIN_CHUNK_SIZE = 16
MAX_CHUNK_SIZE = 8192  # the input limit of common embedding models (OpenAI's: 8,191 tokens)
ChunkSize = Annotated[int, Field(ge=MIN_CHUNK_SIZE, le=MAX_CHUNK_SIZE)]
ChunkOverlap = Annotated[int, Field(ge=0, le=MAX_CHUNK_SIZE // 2)]


def check_sizes(chunk_size: object, chunk_overlap: object) -> tuple[int, int]:
    """The chunk size (16 to 8,192 tokens) and overlap (at most half of it), checked."""
    if (
        isinstance(chunk_size, bool)
        or not isinstance(chunk_size, int)
        or not MIN_CHUNK_SIZE <= chunk_size <= MAX_CHUNK_SIZE
    ):
        raise InvalidInputError(
            "chunk_size", f"must be an integer from {MIN_CHUNK_SIZE} to {MAX_CHUNK_SIZE} tokens"
        )
    if isinstance(chunk_overlap, bool) or not isinstance(chunk_overlap, int):
        raise InvalidInputError("chunk_overlap", "must be an integer")
    if not 0 <= chunk_overlap < chunk_size // 2 + 1:
        raise InvalidInputError("chunk_overlap", "must be between 0 and half of chunk_size")
    return chunk_size, chunk_overlap


def chunk_markdown(
    markdown: str, chunk_size: int = 800, chunk_overlap: int = 100, count: Counter = count_tokens
) -> list[Chunk]:
    """Heading-aware chunks of ``markdown`` (see the module docstring)."""
    chunk_size, chunk_overlap = check_sizes(chunk_size, chunk_overlap)
    room = chunk_size - chunk_overlap  # pieces of a split block leave room for the overlap
    blocks = [piece for block in parse_blocks(markdown) for piece in split_block(block, room, count)]

    sizes = {id(block): count(block.text) for block in blocks}  # every block lives to the end
    separator = count("\n\n")

    def size(block: Block) -> int:
        known = sizes.get(id(block))
        return count(block.text) if known is None else known  # overlap tails are short

    def size_of(group: list[Block]) -> int:
        """The tokens of the group joined by blank lines: blocks meet at white space."""
        return sum(size(b) for b in group) + separator * max(0, len(group) - 1)

    chunks: list[Chunk] = []
    current: list[Block] = []
    current_size = 0
    fresh = 0  # blocks of the current chunk that are not overlap

    def close() -> None:
        text = "\n\n".join(b.text for b in current)
        first_new = current[len(current) - fresh] if fresh else current[0]
        chunks.append(
            Chunk(
                text,
                list(first_new.heading_path),
                current[0].start,
                current[-1].end,
                count(text),
                len(chunks),
                list(current),
            )
        )

    for number, block in enumerate(blocks):
        if number % 1024 == 0:
            check_deadline()
        if current and current_size + separator + sizes[id(block)] > chunk_size:
            close()
            carry = _overlap(current[len(current) - fresh :], chunk_overlap, count)
            carry_size = size_of(carry)
            while carry and carry_size + separator + sizes[id(block)] > chunk_size:
                carry_size -= size(carry[0]) + (separator if len(carry) > 1 else 0)
                carry = carry[1:]  # never let the overlap push a new block out: progress is certain
            current, current_size, fresh = list(carry), carry_size, 0
        current_size += sizes[id(block)] + (separator if current else 0)
        current.append(block)
        fresh += 1
    if current and fresh:
        close()
    return chunks
