"""hello_pgmem: memory and retrieval for LLM agents in one PostgreSQL (pgvector + Apache AGE).

Start with :func:`connect`::

    import hello_pgmem

    with hello_pgmem.connect() as store:
        store.memory("alice").add_memory("Alice lives in Berlin", "semantic")

Every name below is importable from here; each is loaded on first use, so that importing the
package (and starting the command line) stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hello_pgmem.agent import HelloAgentsLLM, SimpleAgent
    from hello_pgmem.core.errors import (
        ConfigurationError,
        DatabaseTimeoutError,
        DatabaseUnavailableError,
        EmbeddingDimensionError,
        EmbeddingError,
        ExtensionMissingError,
        GraphError,
        HelloPgmemError,
        InvalidInputError,
        LLMError,
        NotFoundError,
        ReadOnlyError,
        SchemaError,
        SchemaNotMigratedError,
    )
    from hello_pgmem.core.models import MemoryConfig, MemoryItem, MemoryStats
    from hello_pgmem.core.settings import Settings
    from hello_pgmem.db import Database, ServerInfo
    from hello_pgmem.db.migrations import downgrade, upgrade
    from hello_pgmem.embedding import Embedder, HashingEmbedder, OpenAIEmbedder, create_embedder
    from hello_pgmem.loop.system import AgentMemorySystem
    from hello_pgmem.loop.writer import LoopConfig
    from hello_pgmem.memory import MemoryManager, MemorySearch, SessionHit
    from hello_pgmem.rag.ingest import TextDocument
    from hello_pgmem.rag.knowledge import KnowledgeBase
    from hello_pgmem.rag.models import ChunkHit, IngestResult
    from hello_pgmem.store import Store, connect
    from hello_pgmem.tools import MemoryTool, RAGTool, Tool, ToolRegistry, tool_action

_HOMES = {
    "connect": "hello_pgmem.store",
    "Store": "hello_pgmem.store",
    "Settings": "hello_pgmem.core.settings",
    "Database": "hello_pgmem.db",
    "ServerInfo": "hello_pgmem.db",
    "upgrade": "hello_pgmem.ops.migrate",
    "downgrade": "hello_pgmem.db.migrations",
    "MemoryManager": "hello_pgmem.memory",
    "MemorySearch": "hello_pgmem.memory",
    "SessionHit": "hello_pgmem.memory",
    "MemoryConfig": "hello_pgmem.core.models",
    "MemoryItem": "hello_pgmem.core.models",
    "MemoryStats": "hello_pgmem.core.models",
    "KnowledgeBase": "hello_pgmem.rag.knowledge",
    "TextDocument": "hello_pgmem.rag.ingest",
    "ChunkHit": "hello_pgmem.rag.models",
    "IngestResult": "hello_pgmem.rag.models",
    "AgentMemorySystem": "hello_pgmem.loop.system",
    "LoopConfig": "hello_pgmem.loop.writer",
    "SimpleAgent": "hello_pgmem.agent",
    "HelloAgentsLLM": "hello_pgmem.agent",
    "MemoryTool": "hello_pgmem.tools",
    "RAGTool": "hello_pgmem.tools",
    "Tool": "hello_pgmem.tools",
    "ToolRegistry": "hello_pgmem.tools",
    "tool_action": "hello_pgmem.tools",
    "Embedder": "hello_pgmem.embedding",
    "HashingEmbedder": "hello_pgmem.embedding",
    "OpenAIEmbedder": "hello_pgmem.embedding",
    "create_embedder": "hello_pgmem.embedding",
    **dict.fromkeys(
        (
            "ConfigurationError",
            "DatabaseTimeoutError",
            "DatabaseUnavailableError",
            "EmbeddingDimensionError",
            "EmbeddingError",
            "ExtensionMissingError",
            "GraphError",
            "HelloPgmemError",
            "InvalidInputError",
            "LLMError",
            "NotFoundError",
            "ReadOnlyError",
            "SchemaError",
            "SchemaNotMigratedError",
        ),
        "hello_pgmem.core.errors",
    ),
}

__all__ = [
    "AgentMemorySystem",
    "ChunkHit",
    "ConfigurationError",
    "Database",
    "DatabaseTimeoutError",
    "DatabaseUnavailableError",
    "Embedder",
    "EmbeddingDimensionError",
    "EmbeddingError",
    "ExtensionMissingError",
    "GraphError",
    "HashingEmbedder",
    "HelloAgentsLLM",
    "HelloPgmemError",
    "IngestResult",
    "InvalidInputError",
    "KnowledgeBase",
    "LLMError",
    "LoopConfig",
    "MemoryConfig",
    "MemoryItem",
    "MemoryManager",
    "MemorySearch",
    "MemoryStats",
    "MemoryTool",
    "NotFoundError",
    "OpenAIEmbedder",
    "RAGTool",
    "ReadOnlyError",
    "SchemaError",
    "SchemaNotMigratedError",
    "ServerInfo",
    "SessionHit",
    "Settings",
    "SimpleAgent",
    "Store",
    "TextDocument",
    "Tool",
    "ToolRegistry",
    "connect",
    "create_embedder",
    "downgrade",
    "tool_action",
    "upgrade",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'hello_pgmem' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
