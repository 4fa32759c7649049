"""The stages a search answers without when they fail, saying so in its results: the catch-up on
the user's few queued memories, the query's vector (the search then ranks by words), the reranker
(its first stage's order stands). Each failure is logged once per process, not per search."""

from __future__ import annotations

import logging

import numpy as np

from hello_pgmem import embedding_queue
from hello_pgmem.core.errors import EmbeddingError, HelloPgmemError
from hello_pgmem.core.models import MemoryItem
from hello_pgmem.core.results import Degraded
from hello_pgmem.llm.rerank import Reranker
from hello_pgmem.memory._parts import MemoryParts

log = logging.getLogger(__name__)

_LOGGED: set[tuple[str, str]] = set()


def waiting_rows(
    parts: MemoryParts, counted: embedding_queue.Pending | None = None
) -> tuple[int, list[Degraded]]:
    """How many of the user's memories wait for a vector of the search's model (``counted``: as
    the search already counted them), after the search embedded them itself when few wait
    (``embedding_queue.waiting_for_search``); a catch-up that failed is said, not raised. None wait where
    writes embed at once."""
    if parts.embeds_now:
        return 0, []
    embedder = parts.registered_embedder
    left, failure = embedding_queue.waiting_for_search(parts.db, embedder, "memory", parts.user_id, counted)
    return left, [] if failure is None else [Degraded("catch_up", failure)]


def query_vector(parts: MemoryParts, text: str, degraded: list[Degraded]) -> np.ndarray | None:
    """The query's vector, or None when the embedder failed (said in ``degraded``: the search then
    ranks by words alone)."""
    try:
        return parts.registered_embedder.encode_query(text)
    except EmbeddingError as exc:
        failure = Degraded("query_embedding", str(exc))
        _log_once(failure)
        degraded.append(failure)
        return None


def _log_once(failure: Degraded) -> None:
    """A stage that failed, in the log once per process and error, not per search; at INFO, since
    the search's results say it to their caller (``Results.degraded``, the notes the tools and the
    command line show)."""
    key = (failure.stage, failure.error)
    if key not in _LOGGED:
        _LOGGED.add(key)
        log.info("search without its %s stage: %s", failure.stage.replace("_", " "), failure.error)


def reranked(
    reranker: Reranker, query: str, found: list[MemoryItem], degraded: list[Degraded]
) -> list[MemoryItem]:
    """``found`` in the reranker's order, its score each item's ``rerank_score`` component; as it
    was when the reranker fails (said in ``degraded``)."""
    try:
        scores = reranker.rerank(query, [item.content for item in found])
    except HelloPgmemError as exc:
        failure = Degraded("rerank", str(exc))
        _log_once(failure)
        degraded.append(failure)
        return found
    for item, score in zip(found, scores, strict=True):
        item.components["rerank_score"] = score
    return [item for _, item in sorted(zip(scores, found, strict=True), key=lambda pair: -pair[0])]
