"""hello_pgmem: memory and retrieval for LLM agents in one PostgreSQL (pgvector + Apache AGE)."""

from hello_pgmem.db import Database, ServerInfo
from hello_pgmem.embedding import Embedder, HashingEmbedder, OpenAIEmbedder, create_embedder
from hello_pgmem.errors import (
    ConfigurationError,
    DatabaseTimeoutError,
    DatabaseUnavailableError,
    EmbeddingDimensionError,
    EmbeddingError,
    ExtensionMissingError,
    GraphError,
    HelloPgmemError,
    LLMError,
    NotFoundError,
    SchemaError,
    SchemaNotMigratedError,
    ValidationError,
)
from hello_pgmem.memory import MemoryManager
from hello_pgmem.migrations import downgrade, upgrade
from hello_pgmem.models import MemoryConfig, MemoryItem, MemoryStats
from hello_pgmem.rag.knowledge import KnowledgeBase, TextDocument
from hello_pgmem.settings import Settings
from hello_pgmem.tools import MemoryTool, RAGTool, Tool, ToolRegistry, tool_action

__all__ = [
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
    "HelloPgmemError",
    "KnowledgeBase",
    "LLMError",
    "MemoryConfig",
    "MemoryItem",
    "MemoryManager",
    "MemoryStats",
    "MemoryTool",
    "NotFoundError",
    "OpenAIEmbedder",
    "RAGTool",
    "SchemaError",
    "SchemaNotMigratedError",
    "ServerInfo",
    "Settings",
    "TextDocument",
    "Tool",
    "ToolRegistry",
    "ValidationError",
    "create_embedder",
    "downgrade",
    "tool_action",
    "upgrade",
]
