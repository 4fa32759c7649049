"""hello_pgmem: memory and retrieval for LLM agents in one PostgreSQL (pgvector + Apache AGE)."""

from hello_pgmem.db import Database, ServerInfo
from hello_pgmem.errors import (
    ConfigurationError,
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
from hello_pgmem.migrations import downgrade, upgrade
from hello_pgmem.settings import Settings

__all__ = [
    "ConfigurationError",
    "Database",
    "DatabaseUnavailableError",
    "EmbeddingDimensionError",
    "EmbeddingError",
    "ExtensionMissingError",
    "GraphError",
    "HelloPgmemError",
    "LLMError",
    "NotFoundError",
    "SchemaError",
    "SchemaNotMigratedError",
    "ServerInfo",
    "Settings",
    "ValidationError",
    "downgrade",
    "upgrade",
]
