"""A deterministic embedder that needs nothing but numpy and mmh3: hashed n-grams.

Character 1–3-grams (which carry Chinese, where words are not separated) and word uni- and
bigrams (which carry English) are hashed into ``dimension`` buckets with signed hashing, weighted,
and L2-normalised. Same text, same vector, on every machine and in every process. It captures
shared wording, not meaning: synonyms and paraphrases do not match. It is the offline default
and what the tests use.

The hashing is scikit-learn's ``HashingVectorizer`` (MurmurHash3, seed 0, alternating sign),
written out so that a command that embeds one query does not spend a second importing
scikit-learn; the vectors are identical to those version 1 of this model always stored (a test
compares the two).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Sequence

import mmh3
import numpy as np

from hello_pgmem.core.text import tokenize
from hello_pgmem.embedding.base import Embedder

VERSION = 1
CHAR_WEIGHT = 1.0
WORD_WEIGHT = 0.7
_WHITE_SPACES = re.compile(r"\s\s+")
_INT_MIN = -(2**31)


def char_ngrams(text: str) -> list[str]:
    """Character 1-, 2- and 3-grams of the lowercased text, runs of white space made one space."""
    text = _WHITE_SPACES.sub(" ", text.lower())
    grams = list(text)
    for n in (2, 3):
        grams += [text[i : i + n] for i in range(len(text) - n + 1)]
    return grams


def word_ngrams(text: str) -> list[str]:
    """Word unigrams and bigrams (CJK runs as character bigrams)."""
    tokens = tokenize(text)
    return tokens + [f"{a} {b}" for a, b in itertools.pairwise(tokens)]


@functools.lru_cache(maxsize=1 << 20)
def _bucket(feature: str, dimension: int) -> tuple[int, float]:
    """The bucket and sign of one feature, as scikit-learn's FeatureHasher computes them."""
    h = mmh3.hash(feature.encode("utf-8"), 0, signed=True)
    index = (2**31) % dimension if h == _INT_MIN else abs(h) % dimension
    return index, 1.0 if h >= 0 else -1.0


def hashed_counts(features: Iterable[str], dimension: int) -> np.ndarray:
    """Signed counts of the features' buckets."""
    buckets = [_bucket(feature, dimension) for feature in features]
    if not buckets:
        return np.zeros(dimension, dtype=np.float64)
    indices, signs = zip(*buckets, strict=True)
    return np.bincount(indices, weights=signs, minlength=dimension)


class HashingEmbedder(Embedder):
    """Signed feature hashing of character and word n-grams (default 384 dimensions)."""

    def __init__(self, dimension: int = 384) -> None:
        if not 8 <= dimension <= 4000:
            raise ValueError(f"dimension must be between 8 and 4000, got {dimension}")
        self.dimension = dimension
        self.model_name = f"hashing-v{VERSION}-{dimension}"

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float64)
        for row, text in enumerate(texts):
            chars = hashed_counts(char_ngrams(text), self.dimension)
            words = hashed_counts(word_ngrams(text), self.dimension)
            # sublinear term frequency keeps long texts from being dominated by repeated n-grams
            vectors[row] = CHAR_WEIGHT * np.sign(chars) * np.log1p(np.abs(chars))
            vectors[row] += WORD_WEIGHT * np.sign(words) * np.log1p(np.abs(words))
        # a text of only separators hashes to nothing; give it a fixed non-zero direction
        empty = ~np.any(vectors, axis=1)
        vectors[empty, 0] = 1.0
        result: np.ndarray = vectors.astype(np.float32)
        return result
