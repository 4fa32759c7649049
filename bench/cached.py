"""An embedder whose vectors are kept on disk between benchmark runs (~/.cache/hello-pgmem/), so
that a slow local model embeds each text once: both ingest patterns, every mode, and the offline
ranking trials read the same vectors. Keyed by model, query or document, and the text's SHA-256;
the data itself is never written into this repository."""

from __future__ import annotations

import atexit
import hashlib
import pickle
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hello_pgmem.embedding import Embedder
from hello_pgmem.embedding.base import TextKind

CACHE = Path.home() / ".cache" / "hello-pgmem"


class CachedEmbedder(Embedder):
    """``inner``'s vectors, each computed once and kept in one file per model."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.dimension = inner.dimension
        self.convention = inner.convention
        self.encodes_in_process = inner.encodes_in_process
        self.path = CACHE / f"vectors-{inner.model_name.replace('/', '_').replace(':', '_')}.pkl"
        self.vectors: dict[bytes, np.ndarray] = (
            pickle.loads(self.path.read_bytes()) if self.path.exists() else {}
        )
        self.added = 0
        atexit.register(self.save)

    def save(self) -> None:
        if self.added:
            CACHE.mkdir(parents=True, exist_ok=True)
            self.path.write_bytes(pickle.dumps(self.vectors))
            self.added = 0

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode_as(texts, "document")

    def _encode_as(self, texts: Sequence[str], kind: TextKind) -> np.ndarray:
        keys = [hashlib.sha256(f"{kind}\0{t}".encode()).digest() for t in texts]
        missing = [i for i, k in enumerate(keys) if k not in self.vectors]
        if missing:
            made = self.inner._checked([texts[i] for i in missing], kind)
            for i, vector in zip(missing, made, strict=True):
                self.vectors[keys[i]] = vector
            self.added += len(missing)
            if self.added >= 2000:
                self.save()
        return np.stack([self.vectors[k] for k in keys])
