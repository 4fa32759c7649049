"""Heading-aware chunking of Markdown.

1. Parse: headings (``#`` … ``######``, outside code fences) maintain a heading path; blank
   lines end paragraphs; fenced code blocks and tables are blocks of their own. A heading line is
   kept at the top of the block that follows it.
2. Pack: blocks go into chunks of at most ``chunk_size`` tokens; each chunk after the first starts
   with up to ``chunk_overlap`` tokens from the end of the previous one (whole blocks, or the last
   sentences of a paragraph). A code block or table is never cut unless it alone exceeds the size
   (then it is split between lines and each piece re-fenced); a paragraph that alone exceeds it is
   split between sentences, then between clauses, then hard.

Chinese needs no spaces: sentences end at 。！？；, clauses at ，、, and tokens are counted per
character. Every chunk keeps its heading path, position, character span and token count.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from hello_pgmem.errors import InvalidInputError
from hello_pgmem.text import count_tokens

HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
TABLE_LINE = re.compile(r"^[ \t]*\|")
SENTENCE_END = re.compile(r"(?<=[。！？；!?;\n])|(?<=[.](?=\s))")
CLAUSE_END = re.compile(r"(?<=[，、,：:])")

Counter = Callable[[str], int]


@dataclass
class Block:
    kind: str  # text | code | table
    text: str
    heading_path: tuple[str, ...]
    start: int
    end: int
    fence: str = ""  # the opening fence line of a code block


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
    pending_heading: tuple[int, str] | None = None  # (start, line) to prepend to the next block
    lines = markdown.splitlines(keepends=True)
    offset = 0
    i = 0

    def emit(kind: str, start: int, end: int, fence: str = "") -> None:
        nonlocal pending_heading
        text_start = start
        if pending_heading is not None:
            text_start = pending_heading[0]
            pending_heading = None
        text = markdown[text_start:end].strip("\n")
        if text.strip():
            blocks.append(Block(kind, text, tuple(headings), text_start, end, fence))

    while i < len(lines):
        line = lines[i]
        stripped = line.rstrip("\n")
        fence = FENCE.match(stripped)
        heading = HEADING.match(stripped)
        if fence:
            marker = fence.group(1)
            start = offset
            offset += len(line)
            i += 1
            while i < len(lines):
                inner = lines[i]
                offset += len(inner)
                i += 1
                if inner.strip().startswith(marker[0] * len(marker)) and inner.strip().strip(marker[0]) == "":
                    break
            emit("code", start, offset, stripped)
        elif heading:
            if pending_heading is not None:
                emit("text", pending_heading[0], offset)  # a heading with no body of its own
            level = len(heading.group(1))
            headings[:] = [*headings[: level - 1], heading.group(2).strip()]
            pending_heading = (offset, stripped)
            offset += len(line)
            i += 1
        elif TABLE_LINE.match(stripped):
            start = offset
            while i < len(lines) and TABLE_LINE.match(lines[i]):
                offset += len(lines[i])
                i += 1
            emit("table", start, offset)
        elif not stripped.strip():
            offset += len(line)
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
    if pending_heading is not None:
        emit("text", pending_heading[0], len(markdown))
    return blocks


def _split_text(block: Block, limit: int, count: Counter) -> list[Block]:
    """A paragraph split between sentences, then clauses, then characters, into pieces <= limit."""
    pieces: list[Block] = []

    def add(text: str, start: int) -> None:
        if text.strip():
            pieces.append(Block(block.kind, text.strip(), block.heading_path, start, start + len(text)))

    def split(text: str, start: int, patterns: list[re.Pattern[str]]) -> None:
        if count(text) <= limit:
            add(text, start)
            return
        if not patterns:  # hard split by characters
            step = max(1, len(text) * limit // max(count(text), 1))
            for k in range(0, len(text), step):
                add(text[k : k + step], start + k)
            return
        parts = [p for p in patterns[0].split(text) if p]
        if len(parts) == 1:
            split(text, start, patterns[1:])
            return
        current, current_start, position = "", start, start
        for part in parts:
            if current and count(current + part) > limit:
                split(current, current_start, patterns[1:])
                current, current_start = "", position
            current += part
            position += len(part)
        split(current, current_start, patterns[1:])

    split(block.text, block.start, [SENTENCE_END, CLAUSE_END])
    return pieces


def _split_fenced(block: Block, limit: int, count: Counter) -> list[Block]:
    """A code block or table split between lines; code pieces are re-fenced."""
    lines = block.text.splitlines()
    closing = ""
    if block.kind == "code":
        opening, lines = lines[0], lines[1:]
        if lines and lines[-1].strip() and set(lines[-1].strip()) <= {"`", "~"}:
            closing, lines = lines[-1], lines[:-1]
        closing = closing or opening.strip()[:3]
    else:
        opening = ""
    header = lines[:2] if block.kind == "table" and len(lines) > 2 else []  # repeat column names
    body = lines[len(header) :]
    pieces: list[Block] = []
    current: list[str] = []

    def wrap(rows: list[str]) -> str:
        inner = "\n".join(header + rows)
        return f"{opening}\n{inner}\n{closing}" if block.kind == "code" else inner

    for row in body:
        if current and count(wrap([*current, row])) > limit:
            pieces.append(Block(block.kind, wrap(current), block.heading_path, block.start, block.end))
            current = []
        if count(wrap([row])) > limit:  # one enormous line: it can only be cut
            plain = Block("text", row, block.heading_path, block.start, block.end)
            pieces += [
                Block(block.kind, wrap([p.text]), block.heading_path, block.start, block.end)
                for p in _split_text(plain, max(1, limit - count(wrap([]))), count)
            ]
            continue
        current.append(row)
    if current:
        pieces.append(Block(block.kind, wrap(current), block.heading_path, block.start, block.end))
    return pieces


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
            tail = ""
            for sentence in reversed(sentences):
                if count(sentence + tail) > budget:
                    break
                tail = sentence + tail
            if tail.strip():
                start = block.end - len(tail)
                taken.insert(
                    0, Block("text", tail.strip(), block.heading_path, max(block.start, start), block.end)
                )
        break
    return taken


def chunk_markdown(
    markdown: str, chunk_size: int = 800, chunk_overlap: int = 100, count: Counter = count_tokens
) -> list[Chunk]:
    """Heading-aware chunks of ``markdown`` (see the module docstring)."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 16:
        raise InvalidInputError("chunk_size", "must be an integer of at least 16 tokens")
    if isinstance(chunk_overlap, bool) or not isinstance(chunk_overlap, int):
        raise InvalidInputError("chunk_overlap", "must be an integer")
    if not 0 <= chunk_overlap < chunk_size // 2 + 1:
        raise InvalidInputError("chunk_overlap", "must be between 0 and half of chunk_size")
    blocks: list[Block] = []
    piece = chunk_size - chunk_overlap  # pieces of a split block leave room for the overlap
    for block in parse_blocks(markdown):
        if count(block.text) <= chunk_size:
            blocks.append(block)
        elif block.kind == "text":
            blocks += _split_text(block, piece, count)
        else:
            blocks += _split_fenced(block, piece, count)

    chunks: list[Chunk] = []
    current: list[Block] = []
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

    for block in blocks:
        if current and count("\n\n".join([*(b.text for b in current), block.text])) > chunk_size:
            close()
            carry = _overlap(current[len(current) - fresh :], chunk_overlap, count)
            while carry and count("\n\n".join([*(b.text for b in carry), block.text])) > chunk_size:
                carry = carry[1:]  # never let the overlap push a new block out: progress is certain
            current, fresh = list(carry), 0
        current.append(block)
        fresh += 1
    if current and fresh:
        close()
    return chunks
