"""The chapter's formulas, opt-in (``scoring="reference"``): each long-term type ranked by a
statement of its own, as the reference does, and a file query (an image, a sound) ranked in its
modality's space.

- episodic: ``search_by_recency(…, 'episodic')``, limit × 5 candidates by vector with the filters
  inside, ``(vector × 0.8 + recency × 0.2) × importance weight``;
- semantic: ``search_semantic``, limit × 5 candidates by vector and limit × 5 from the knowledge
  graph around the entities the query names, ``(vector × 0.7 + graph × 0.3) × importance weight``;
- perceptual: ``search_by_recency(…, 'perceptual')`` by description, perceptual recency.

When the vector search finds nothing, keyword matching takes over, as in the reference.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.filters import MemoryFilter
from hello_pgmem.core.models import MemoryItem
from hello_pgmem.graph.normalize import name_candidates
from hello_pgmem.memory._parts import MemoryParts
from hello_pgmem.memory._queries import COLUMNS
from hello_pgmem.memory._rows import memory_rows

if TYPE_CHECKING:
    from hello_pgmem.memory._search_request import MemorySearch

TYPE_SEARCH = {
    "episodic": """
SELECT id, memory_type, content, importance, session_id, modality, metadata,
       created_at, vector_score, recency_score, importance_weight, score
FROM search_by_recency(%(user_id)s, %(model)s, %(query)s, 'episodic', %(limit)s, %(session_id)s, NULL,
                       %(since)s, %(until)s, %(min_importance)s, %(now)s)
""",
    "semantic": """
SELECT id, memory_type, content, importance, session_id, NULL::text AS modality, metadata,
       created_at, vector_score, graph_score, importance_weight, score
FROM search_semantic(%(user_id)s, %(model)s, %(query)s, %(seeds)s, %(limit)s, %(max_hops)s,
                     %(since)s, %(until)s, %(min_importance)s)
""",
    "perceptual": """
SELECT id, memory_type, content, importance, session_id, modality, metadata,
       created_at, vector_score, recency_score, importance_weight, score
FROM search_by_recency(%(user_id)s, %(model)s, %(query)s, 'perceptual', %(limit)s, NULL, %(modality)s,
                       %(since)s, %(until)s, %(min_importance)s, %(now)s, %(space)s)
""",
}

KEYWORD = f"""
SELECT {COLUMNS}, 0.5::double precision AS vector_score, r.recency AS recency_score,
       importance_weight(importance) AS importance_weight,
       CASE WHEN memory_type = 'semantic' THEN semantic_score(0.5, 0, importance)
            ELSE episodic_score(0.5, r.recency, importance) END AS score
FROM memories
CROSS JOIN LATERAL (SELECT episodic_recency(
    greatest(0, extract(epoch FROM %(now)s::timestamptz - created_at)::float8 / 86400)) AS recency) r
WHERE user_id = %(user_id)s AND memory_type = %(memory_type)s AND forgotten_at IS NULL
  AND (lexemes @@ terms_query(query_terms(%(query_text)s))
       OR strpos(lower(content), lower(%(query_text)s)) > 0)
  AND _passes_filters(memory_type, session_id, created_at, importance, modality, metadata, %(filter)s)
ORDER BY score DESC, id
LIMIT %(limit)s
"""
"""The reference's fallback: substring or full-text matches, the vector score fixed at 0.5."""


def ranked(parts: MemoryParts, search: MemorySearch, kind: str, vector: np.ndarray) -> list[MemoryItem]:
    """The memories of one long-term type ranked by the reference's formula for it (keyword
    matching when the vector search finds nothing), at most the search's per-type limit."""
    params = _params(parts, search, kind)
    params.update(
        model=parts.registered_embedder.model_name,
        query=vector,
        seeds=name_candidates(search.query),
        max_hops=2,
        modality=search.target_modality,
        space="text_embedding",
    )
    found = _rows(parts, TYPE_SEARCH[kind], params)
    return found or _rows(parts, KEYWORD, params)


def by_file(parts: MemoryParts, search: MemorySearch) -> list[MemoryItem]:
    """Perceptual memories of the file's modality nearest to the file, in that modality's
    encoder's space, by the reference's formula."""
    perceptual = parts.perceptual
    modality = search.query_modality
    if search.target_modality is not None and search.target_modality not in perceptual.modalities:
        raise InvalidInputError("target_modality", f"must be one of {', '.join(perceptual.modalities)}")
    encoder = perceptual.encoder(modality)
    if encoder is None:
        raise InvalidInputError("query_modality", f"must be text or one of {', '.join(perceptual.encoders)}")
    if search.target_modality not in (None, modality):
        raise InvalidInputError(
            "target_modality",
            f"a {modality} query finds {modality} memories; search other modalities with a text query",
        )
    params = _params(parts, search, "perceptual")
    params.update(
        model=encoder.model_name,
        query=encoder.encode_file(search.query),
        modality=modality,
        space="embedding",
    )
    return _rows(parts, TYPE_SEARCH["perceptual"], params)


def _params(parts: MemoryParts, search: MemorySearch, kind: str) -> dict[str, Any]:
    return {
        "user_id": parts.user_id,
        "memory_type": kind,
        "query_text": search.query,
        "limit": search.per_type_limit or search.limit,
        "session_id": search.session_id,
        "since": search.since,
        "until": search.until,
        "min_importance": search.floor,
        "filter": MemoryFilter(
            session_id=search.session_id, since=search.since, until=search.until, min_importance=search.floor
        ),
        "now": parts.clock(),
    }


def _rows(parts: MemoryParts, statement: str, params: dict[str, Any]) -> list[MemoryItem]:
    with parts.db.transaction(parts.user_id) as conn:
        return conn.cursor(row_factory=memory_rows(parts.user_id)).execute(statement, params).fetchall()
