"""What is embedded for a row: a memory's content; a chunk's text, without its Markdown markup,
under its headings. Below the memory and document packages, which both queue rows."""

from __future__ import annotations

import re
from collections.abc import Sequence

from hello_pgmem.embedding_queue.queries import Kind

_MARKUP = [
    (re.compile(r"^#{1,6}\s*", re.M), ""),
    # a link's text and target hold no bracket, parenthesis or line break: each attempt stops at
    # the next one, so the work is linear whatever the text (a run of "[" took seconds)
    (re.compile(r"\[([^\[\]\n]*)\]\([^()\[\]\n]*\)"), r"\1"),
    (re.compile(r"[*_]{1,3}([^*_\n]+)[*_]{1,3}"), r"\1"),
    (re.compile(r"`{1,3}"), ""),
    (re.compile(r"[ \t]+"), " "),
]


def chunk_embedding_text(content: str, heading_path: Sequence[str]) -> str:
    """What is embedded (and cached) for a chunk: its heading path, then its text without
    Markdown markup."""
    text = content
    for pattern, replacement in _MARKUP:
        text = pattern.sub(replacement, text)
    heading = " > ".join(heading_path)
    return f"{heading}\n{text.strip()}" if heading else text.strip()


def embedding_text(kind: Kind, content: str, heading_path: Sequence[str] | None) -> str:
    """What is embedded for a row of either kind."""
    return content if kind == "memory" else chunk_embedding_text(content, heading_path or [])
