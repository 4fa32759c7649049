"""The Embedder interface: a model name, a dimension and a batch ``encode``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from hello_pgmem.core.errors import EmbeddingDimensionError, EmbeddingError


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension.

    ``model_name`` is stored with every vector: a search only compares vectors of one model.
    """

    model_name: str
    dimension: int
    encodes_in_process: bool = False
    """True when ``encode`` runs here, on this machine's processor, in well under a millisecond a
    text: a batch may then be embedded a part at a time inside its write transaction."""

    @abstractmethod
    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts`` (len(texts) x dimension)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts``, checked: right shape, finite, never all zero."""
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of strings; use encode_one for one text")
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = np.asarray(self._encode(list(texts)), dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise EmbeddingError(
                f"{self.model_name}: expected {len(texts)} vectors, got shape {vectors.shape}"
            )
        if vectors.shape[1] != self.dimension:
            raise EmbeddingDimensionError(
                f"{self.model_name}: expected {self.dimension} dimensions, got {vectors.shape[1]}"
            )
        if not np.all(np.isfinite(vectors)):
            raise EmbeddingError(f"{self.model_name}: returned NaN or infinite values")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if np.any(norms == 0):
            raise EmbeddingError(f"{self.model_name}: returned a zero vector")
        normalised: np.ndarray = vectors / norms
        return normalised

    def encode_one(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.encode([text])[0]
        return vector

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_name={self.model_name!r}, dimension={self.dimension})"
