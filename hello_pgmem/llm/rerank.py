"""A second stage for users who run a reranker: the ``/rerank`` API that Cohere, Jina, vLLM and
Text Embeddings Inference serve (a query, the documents, ``top_n``; back, each document's index
and relevance). Off unless ``RERANK_BASE_URL`` names a server; no reranker is packaged here."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import httpx

from hello_pgmem.core.errors import LLMError
from hello_pgmem.core.settings import Settings

log = logging.getLogger(__name__)


class Reranker:
    """``POST {base_url}/rerank``: relevance scores of documents for a query, from a cross-encoder."""

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        max_retries: int = 2,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/rerank"
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.max_retries = max_retries
        self._client = httpx.Client(headers=headers, timeout=timeout_s, transport=transport)

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """Each document's relevance to ``query``, in the documents' order (higher is better)."""
        if not documents:
            return []
        body: dict[str, Any] = {"query": query, "documents": list(documents), "top_n": len(documents)}
        if self.model:
            body["model"] = self.model
        failure: Exception | None = None
        for attempt in range(self.max_retries + 1):
            if failure is not None:
                log.info("reranker: %s, retry %d of %d", failure, attempt, self.max_retries)
            try:
                response = self._client.post(self.url, json=body)
                response.raise_for_status()
                return self._scores(response.json(), len(documents))
            except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
                failure = exc
        raise LLMError(f"the reranker at {self.url} failed: {failure}") from failure

    @staticmethod
    def _scores(answer: Any, count: int) -> list[float]:
        """Scores by index from Cohere's, Jina's and vLLM's ``results`` or TEI's list."""
        rows = answer["results"] if isinstance(answer, dict) else answer
        scores = [float("-inf")] * count
        for row in rows:
            index = int(row["index"])
            if not 0 <= index < count:
                raise ValueError(f"the reranker named document {index} of {count}")
            scores[index] = float(row.get("relevance_score", row.get("score")))
        return scores

    def close(self) -> None:
        self._client.close()


def create_reranker(settings: Settings) -> Reranker | None:
    """The reranker the settings name (``RERANK_BASE_URL``), or None."""
    if not settings.rerank_base_url:
        return None
    return Reranker(
        settings.rerank_base_url,
        settings.rerank_model,
        api_key=settings.rerank_api_key,
        timeout_s=settings.rerank_timeout_s,
    )
