"""Semantic memory: knowledge, preferences and rules, with a knowledge graph.

Adding a memory extracts its entities and relations (chat model or rules) before the
transaction, then writes the memory, its vector, its entities, mentions, relations and AGE
vertices and edges in one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from hello_pgmem.core.models import MemoryType
from hello_pgmem.db import Conn
from hello_pgmem.graph.extracted import Extraction, Extractor
from hello_pgmem.graph.store import GraphStore
from hello_pgmem.memory._longterm import LongTermMemory


class SemanticMemory(LongTermMemory):
    """Knowledge of one user, searchable by meaning and through its knowledge graph."""

    memory_type: MemoryType = "semantic"

    def __init__(self, *args: Any, extractor: Extractor, graph: GraphStore, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.extractor = extractor
        self.graph = graph

    def prepare(self, contents: Sequence[str]) -> list[Extraction]:
        return [self.extractor.extract(content) for content in contents]

    def write_extras(
        self, conn: Conn, memory_ids: Sequence[UUID], prepared: Sequence[Any], new: bool
    ) -> None:
        for memory_id, extraction in zip(memory_ids, prepared, strict=True):
            if not new:
                self.graph.unlink(conn, [memory_id], keep_vertex=True)
            self.graph.write(conn, memory_id, extraction, create_vertex=new)
