"""Embedding backends: OpenAI-compatible API, local sentence-transformers, hashing."""

from hello_pgmem.embedding.base import Embedder
from hello_pgmem.embedding.hashing import HashingEmbedder
from hello_pgmem.embedding.local import LocalEmbedder
from hello_pgmem.embedding.openai_api import OpenAIEmbedder
from hello_pgmem.embedding.select import create_embedder

__all__ = ["Embedder", "HashingEmbedder", "LocalEmbedder", "OpenAIEmbedder", "create_embedder"]
