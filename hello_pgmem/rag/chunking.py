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

from dataclasses import dataclass, field
from typing import Annotated

from pydantic import Field

from hello_pgmem.core.deadline import check_deadline
from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.text import count_tokens
from hello_pgmem.rag.blocks import Block, Counter, parse_blocks
from hello_pgmem.rag.splitting import SENTENCE_END, split_block


@dataclass
class Chunk:
    content: str
    heading_path: list[str]
    start: int
    end: int
    tokens: int
    position: int = 0
    blocks: list[Block] = field(default_factory=list, repr=False)


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
