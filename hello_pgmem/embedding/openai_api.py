"""Embeddings from any OpenAI-compatible endpoint (OpenAI, DashScope, vLLM, ...) via ``openai``."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import openai

from hello_pgmem.core.errors import ConfigurationError, EmbeddingError
from hello_pgmem.embedding.base import Embedder, TextKind
from hello_pgmem.embedding.conventions import Convention, convention_for

log = logging.getLogger(__name__)


class OpenAIEmbedder(Embedder):
    """Batched calls to ``POST {base_url}/embeddings`` with retries and a timeout.

    The dimension is probed with one call unless given. ``batch_size`` defaults to 10, the
    per-request cap of DashScope's text-embedding models. ``convention`` (by default the
    registry's for ``model``) says how queries and documents differ: prefixes, or an
    ``input_type`` field sent with each request.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimension: int | None = None,
        batch_size: int = 10,
        timeout_s: float = 30.0,
        max_retries: int = 3,
        http_client: object | None = None,
        convention: Convention | None = None,
    ) -> None:
        if not model:
            raise ConfigurationError("EMBED_MODEL_NAME must name the embedding model")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.model_name = model
        self.convention = convention or convention_for(model)
        self.batch_size = batch_size
        self.batch_texts = batch_size  # a worker's part of work is one request
        self.batch_chars = 200_000
        kwargs: dict[str, object] = {"timeout": timeout_s, "max_retries": max_retries}
        if http_client is not None:
            kwargs["http_client"] = http_client
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", **kwargs)  # type: ignore[arg-type]
        self.dimension = dimension if dimension is not None else len(self._call(["dimension probe"], None)[0])

    def _call(self, texts: list[str], input_type: str | None) -> list[list[float]]:
        extra = {"input_type": input_type} if input_type else None
        try:
            response = self._client.embeddings.create(
                model=self.model_name, input=texts, encoding_format="float", extra_body=extra
            )
        except openai.OpenAIError as exc:
            raise EmbeddingError(f"embedding request to {self.model_name!r} failed: {exc}") from exc
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(texts):
            raise EmbeddingError(
                f"{self.model_name}: sent {len(texts)} texts, got {len(data)} embeddings back"
            )
        return [list(item.embedding) for item in data]

    def _encode(self, texts: Sequence[str], input_type: str | None = None) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            rows.extend(self._call(list(texts[start : start + self.batch_size]), input_type))
        return np.asarray(rows, dtype=np.float32)

    def _encode_as(self, texts: Sequence[str], kind: TextKind) -> np.ndarray:
        types = self.convention.input_types
        if types is None:
            return super()._encode_as(texts, kind)
        return self._encode(texts, types[0] if kind == "query" else types[1])
