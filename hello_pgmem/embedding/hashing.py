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
from collections.abc import Sequence

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


_MAX_CACHED = 1 << 20


class _Buckets:
    """Each feature's bucket and sign, as scikit-learn's FeatureHasher computes them, hashed once
    per process and dimension (a bounded cache: emptied when it reaches ``_MAX_CACHED`` features)."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.signed: dict[str, int] = {}  # bucket + 1, negative for a negative sign

    def of(self, features: list[str]) -> list[int]:
        """The signed buckets (bucket + 1, with the feature's sign) of ``features``."""
        known = self.signed.get  # never 0; one lookup, safe while another thread empties the cache
        return [known(f) or self._hash(f) for f in features]

    def _hash(self, feature: str) -> int:
        if len(self.signed) >= _MAX_CACHED:
            self.signed.clear()
        h = mmh3.hash(feature.encode("utf-8"), 0, signed=True)
        index = (2**31) % self.dimension if h == _INT_MIN else abs(h) % self.dimension
        self.signed[feature] = value = index + 1 if h >= 0 else -(index + 1)
        return value


@functools.cache
def _buckets_of(dimension: int) -> _Buckets:
    """The one cache of a dimension, shared by every embedder of it (a manager makes its own)."""
    return _Buckets(dimension)


def hashed_counts(signed: list[list[int]], dimension: int) -> np.ndarray:
    """Each text's signed counts of its features' buckets (len(signed) x dimension), from the
    signed buckets of :meth:`_Buckets.of`."""
    lengths = np.fromiter((len(row) for row in signed), dtype=np.int64, count=len(signed))
    flat = np.fromiter(itertools.chain.from_iterable(signed), dtype=np.int64, count=int(lengths.sum()))
    rows = np.repeat(np.arange(len(signed), dtype=np.int64), lengths)
    cells = rows * dimension + np.abs(flat) - 1
    counts = np.bincount(cells, weights=np.sign(flat).astype(np.float64), minlength=len(signed) * dimension)
    return counts.reshape(len(signed), dimension)


def sublinear(counts: np.ndarray) -> np.ndarray:
    """Sublinear term frequency, keeping each sign: long texts are not dominated by repeated n-grams."""
    result: np.ndarray = np.sign(counts) * np.log1p(np.abs(counts))
    return result


class HashingEmbedder(Embedder):
    """Signed feature hashing of character and word n-grams (default 384 dimensions). Its cosine
    measures shared wording, which the lexical ranking already holds: the hybrid search weighs
    it by the best candidate's, at 0.2 (``fusion`` weighted)."""

    encodes_in_process = True
    fusion = "weighted"
    batch_texts = 500
    batch_chars = 1_000_000

    def __init__(self, dimension: int = 384) -> None:
        if not 8 <= dimension <= 4000:
            raise ValueError(f"dimension must be between 8 and 4000, got {dimension}")
        self.dimension = dimension
        self.model_name = f"hashing-v{VERSION}-{dimension}"
        self._buckets = _buckets_of(dimension)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        buckets = self._buckets
        chars = hashed_counts([buckets.of(char_ngrams(text)) for text in texts], self.dimension)
        words = hashed_counts([buckets.of(word_ngrams(text)) for text in texts], self.dimension)
        vectors = CHAR_WEIGHT * sublinear(chars)
        vectors += WORD_WEIGHT * sublinear(words)
        # a text of only separators hashes to nothing; give it a fixed non-zero direction
        empty = ~np.any(vectors, axis=1)
        vectors[empty, 0] = 1.0
        result: np.ndarray = vectors.astype(np.float32)
        return result
