"""The Embedder interface: a model name, a dimension, and texts embedded as documents (what is
stored) or as queries (what a search asks), each as the model wants (:mod:`.conventions`)."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from typing import Literal

import numpy as np

from hello_pgmem.core.errors import EmbeddingDimensionError, EmbeddingError
from hello_pgmem.embedding.conventions import SYMMETRIC, Convention

TextKind = Literal["query", "document"]


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension.

    ``model_name`` is stored with every vector: a search only compares vectors of one model.
    ``convention`` says how the model tells queries from documents (prefixes, or the request's
    ``input_type``); the default embeds both alike.
    """

    model_name: str
    dimension: int
    convention: Convention = SYMMETRIC
    fusion: Literal["weighted", "spread"] = "spread"
    """How the hybrid search weighs this model's cosine (docs/search.md): spread over the candidates,
    as a model of meaning deserves, or by the best alone, for a model of wording."""
    encodes_in_process: bool = False
    """True when embedding runs here, on this machine's processor, in well under a millisecond a
    text: a write then embeds its rows itself (``PGMEM_EMBED=auto``) instead of queueing them."""
    batch_texts: int = 32
    """At most this many texts per call when a worker embeds queued rows..."""
    batch_chars: int = 8_000
    """... and at most this many characters (a call that returns within a few seconds)."""
    query_cache_size: int = 256
    """Query vectors kept per embedder, the most recently used (a repeated search embeds nothing)."""

    @abstractmethod
    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts`` as given (len(texts) x dimension)."""

    def _encode_as(self, texts: Sequence[str], kind: TextKind) -> np.ndarray:
        """Vectors for ``texts`` of one kind: the convention's prefix, then :meth:`_encode`. A
        backend that tells the kind another way (a request field) overrides this."""
        prefix = self.convention.query_prefix if kind == "query" else self.convention.document_prefix
        return self._encode([prefix + text for text in texts] if prefix else list(texts))

    def within_window(self, text: str, kind: TextKind) -> str:
        """The part of ``text`` the model reads: all of it, unless the model has a window of its own
        (a model that would take time growing with a text it never reads cuts it first)."""
        return text

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of texts to store (memories, chunks), checked."""
        return self._checked(texts, "document")

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of texts to search with (questions, their rewrites), checked."""
        return self._checked(texts, "query")

    def encode_query(self, text: str) -> np.ndarray:
        """One question's vector, from the embedder's cache of recent questions when there."""
        cache = self.__dict__.setdefault("_query_cache", OrderedDict())
        lock = self.__dict__.setdefault("_query_lock", threading.Lock())
        with lock:
            if text in cache:
                cache.move_to_end(text)
                found: np.ndarray = cache[text]
                return found
        vector: np.ndarray = self.encode_queries([text])[0]
        vector.flags.writeable = False  # shared by every search that asks the same
        with lock:
            cache[text] = vector
            while len(cache) > self.query_cache_size:
                cache.popitem(last=False)
        return vector

    def _checked(self, texts: Sequence[str], kind: TextKind) -> np.ndarray:
        """Right shape, finite, never all zero, L2-normalised."""
        if isinstance(texts, str):
            raise TypeError("embedding takes a sequence of strings; use encode_query for one question")
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = np.asarray(
            self._encode_as([self.within_window(t, kind) for t in texts], kind), dtype=np.float32
        )
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

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_name={self.model_name!r}, dimension={self.dimension})"
