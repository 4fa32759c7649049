"""The types of the tools' action parameters: each also says, in JSON Schema (an enum, bounds),
the rule the library checks when the action runs, so an agent sees the rules before it calls.
The checks themselves stay the library's, with its messages naming the field and the rule."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Strict

from hello_pgmem.core.models import (
    FORGET_STRATEGIES,
    MAX_AGE_DAYS,
    MAX_SESSION_MEMORIES,
    MEMORY_TYPES,
    MODALITIES,
)
from hello_pgmem.graph.store import MAX_NEIGHBOURHOOD_DEPTH
from hello_pgmem.rag.knowledge import MAX_LISTED, MAX_TOP_K
from hello_pgmem.rag.search import ANSWER_CHARS


class Schema:
    """JSON Schema keywords a parameter's annotation adds to its schema (pydantic ignores it)."""

    def __init__(self, **keywords: Any) -> None:
        self.keywords = keywords


_TYPE_NAMES = Schema(enum=list(MEMORY_TYPES))
_MODALITIES = Schema(enum=list(MODALITIES))

MemoryTypeName = Annotated[str, _TYPE_NAMES]
OptionalMemoryType = Annotated[str | None, _TYPE_NAMES]
MemoryTypeNames = Annotated[list[str] | None, Schema(items={"type": "string", "enum": list(MEMORY_TYPES)})]
ModalityName = Annotated[str, _MODALITIES]
OptionalModality = Annotated[str | None, _MODALITIES]
Strategy = Annotated[str, Schema(enum=list(FORGET_STRATEGIES))]
Confirm = Annotated[bool, Strict()]
"""A go-ahead for something that cannot be undone: true itself, never ``"yes"`` or 1."""
Fraction = Annotated[float, Schema(minimum=0, maximum=1)]
OptionalFraction = Annotated[float | None, Schema(minimum=0, maximum=1)]
Days = Annotated[float, Schema(minimum=0, maximum=MAX_AGE_DAYS)]
Count = Annotated[int, Schema(minimum=1)]
"""How many to return; the maximum is the memory's configured ``max_search_limit``."""
SessionMemories = Annotated[int, Schema(minimum=1, maximum=MAX_SESSION_MEMORIES)]
GraphDepth = Annotated[int, Schema(minimum=1, maximum=MAX_NEIGHBOURHOOD_DEPTH)]
Passages = Annotated[int, Schema(minimum=1, maximum=MAX_TOP_K)]
AnswerChars = Annotated[int, Schema(minimum=ANSWER_CHARS[0], maximum=ANSWER_CHARS[1])]
Listed = Annotated[int, Schema(minimum=1, maximum=MAX_LISTED)]
