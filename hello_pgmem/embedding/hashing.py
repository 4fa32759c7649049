"""A deterministic embedder that needs nothing but scikit-learn: hashed n-grams.

Character 1–3-grams (which carry Chinese, where words are not separated) and word uni- and
bigrams (which carry English) are hashed into ``dimension`` buckets with signed hashing, weighted,
and L2-normalised. Same text, same vector, on every machine and in every process. It captures
shared wording, not meaning: synonyms and paraphrases do not match. It is the offline default
and what the tests use.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
from sklearn.feature_extraction.text import HashingVectorizer

from hello_pgmem.embedding.base import Embedder
from hello_pgmem.text import tokenize

VERSION = 1
CHAR_WEIGHT = 1.0
WORD_WEIGHT = 0.7


def _words(text: str) -> list[str]:
    tokens = tokenize(text)
    return tokens + [f"{a} {b}" for a, b in itertools.pairwise(tokens)]


class HashingEmbedder(Embedder):
    """Signed feature hashing of character and word n-grams (default 384 dimensions)."""

    def __init__(self, dimension: int = 384) -> None:
        if not 8 <= dimension <= 4000:
            raise ValueError(f"dimension must be between 8 and 4000, got {dimension}")
        self.dimension = dimension
        self.model_name = f"hashing-v{VERSION}-{dimension}"
        common = {"n_features": dimension, "alternate_sign": True, "norm": None, "lowercase": True}
        self._chars = HashingVectorizer(analyzer="char", ngram_range=(1, 3), **common)
        self._words = HashingVectorizer(analyzer=_words, **common)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        chars = self._chars.transform(texts).toarray()
        words = self._words.transform(texts).toarray()
        # sublinear term frequency keeps long texts from being dominated by repeated n-grams
        vectors = CHAR_WEIGHT * np.sign(chars) * np.log1p(np.abs(chars))
        vectors += WORD_WEIGHT * np.sign(words) * np.log1p(np.abs(words))
        # a text of only separators hashes to nothing; give it a fixed non-zero direction
        empty = ~np.any(vectors, axis=1)
        vectors[empty, 0] = 1.0
        result: np.ndarray = vectors.astype(np.float32)
        return result
