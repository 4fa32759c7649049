"""Semantic memory: knowledge, preferences and rules of one user.

Scored ``(vector × 0.7 + graph × 0.3) × importance weight``. The knowledge-graph component
(entity extraction and graph expansion) is built by the semantic-graph work; until then
``graph_score`` is 0 for every memory and the ranking is by vector similarity and importance.
"""

from __future__ import annotations

from datetime import datetime

from hello_pgmem.memory.longterm import COLUMNS, LongTermMemory
from hello_pgmem.models import MemoryItem, MemoryType

SEARCH = f"""
SELECT {", ".join("m." + c.strip() for c in COLUMNS.split(","))},
       c.vector_score, 0.0::double precision AS graph_score, importance_weight(m.importance),
       semantic_score(c.vector_score, 0, m.importance) AS score
FROM memory_candidates(%(user_id)s, %(model)s, %(query)s, %(pool)s, ARRAY['semantic'], NULL,
                       %(since)s, %(until)s, %(min_importance)s, NULL) AS c
JOIN memories m ON m.user_id = %(user_id)s AND m.id = c.id
ORDER BY score DESC, m.id
LIMIT %(limit)s
"""


class SemanticMemory(LongTermMemory):
    """Knowledge of one user, searchable by meaning."""

    memory_type: MemoryType = "semantic"

    def retrieve(
        self,
        query: str,
        limit: int = 5,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        min_importance: float | None = None,
    ) -> list[MemoryItem]:
        """Ranked knowledge; each carries relevance_score, vector_score and graph_score."""
        found = self._ranked(
            SEARCH,
            query,
            ("vector_score", "graph_score"),
            limit=limit,
            since=since,
            until=until,
            min_importance=min_importance,
        )
        if found:
            return found
        return self.keyword_search(query, limit, since=since, until=until, min_importance=min_importance)
