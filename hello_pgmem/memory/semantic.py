"""Semantic memory: knowledge, preferences and rules, with a knowledge graph.

Adding a memory extracts its entities and relations (chat model or rules) before the
transaction, then writes the memory, its vector, its entities, mentions, relations and AGE
vertices and edges in one transaction. Search is the SQL function ``search_semantic``: vector
candidates and graph candidates (1–2 hops from the entities the query names) merged by memory id,
score ``(vector × 0.7 + graph × 0.3) × importance weight``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import numpy as np

from hello_pgmem.core.models import MemoryItem, MemoryType, Scoring
from hello_pgmem.db import Conn
from hello_pgmem.graph.extracted import Extraction, Extractor
from hello_pgmem.graph.normalize import name_candidates
from hello_pgmem.graph.store import GraphStore
from hello_pgmem.memory import ranked_queries as rq
from hello_pgmem.memory.longterm import LongTermMemory


class SemanticMemory(LongTermMemory):
    """Knowledge of one user, searchable by meaning and through its knowledge graph."""

    memory_type: MemoryType = "semantic"

    def __init__(
        self, *args: Any, extractor: Extractor, graph: GraphStore, max_hops: int = 2, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.extractor = extractor
        self.graph = graph
        self.max_hops = max_hops

    def prepare(self, contents: Sequence[str]) -> list[Extraction]:
        return [self.extractor.extract(content) for content in contents]

    def write_extras(
        self, conn: Conn, memory_ids: Sequence[UUID], prepared: Sequence[Any], new: bool
    ) -> None:
        for memory_id, extraction in zip(memory_ids, prepared, strict=True):
            if not new:
                self.graph.unlink(conn, [memory_id], keep_vertex=True)
            self.graph.write(conn, memory_id, extraction, create_vertex=new)

    def retrieve(
        self,
        query: str,
        limit: int = 5,
        *,
        vector: np.ndarray | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        min_importance: float | None = None,
        max_hops: int | None = None,
        scoring: Scoring | None = None,
    ) -> list[MemoryItem]:
        """Ranked knowledge; each carries its score and components (vector_score, graph_score).

        Hybrid scoring (the default) adds the knowledge graph's expansion of the entities the query
        names to the lexical and vector branches; ``scoring="reference"`` is the reference's
        ``(vector × 0.7 + graph × 0.3) × importance weight`` (``search_semantic``).
        """
        hops = self.max_hops if max_hops is None else max_hops
        if not self.uses_reference(scoring):
            filters: dict[str, Any] = {"since": since, "until": until, "min_importance": min_importance}
            return self.search(query, limit, vector=vector, scoring=scoring, max_hops=hops, **filters)
        found = self.ranked(
            rq.SEARCH_SEMANTIC,
            query,
            vector,
            limit=limit,
            seeds=name_candidates(query),
            max_hops=hops,
            since=since,
            until=until,
            min_importance=min_importance,
        )
        return found or self.keyword_search(
            query, limit, since=since, until=until, min_importance=min_importance
        )
