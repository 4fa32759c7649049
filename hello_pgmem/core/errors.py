"""Exceptions raised by hello_pgmem.

Every error the library raises on purpose derives from :class:`HelloPgmemError`::

    HelloPgmemError
     +-- ConfigurationError          bad or missing settings
     +-- DatabaseUnavailableError    the server cannot be reached
     +-- DatabaseTimeoutError        a statement or a lock wait ran past its configured limit
     +-- SchemaError                 the database is not ready for us
     |    +-- SchemaNotMigratedError     run "hello-pgmem migrate"
     |    +-- ExtensionMissingError      pgvector (or AGE, when asked for) is absent
     +-- InvalidInputError           input breaks a rule; names the field and the rule
     |    +-- UnsupportedFormatError     a file neither text nor a known format (ingest skips it)
     +-- NotFoundError               no such memory, document or entity for this user
     +-- GraphError                  the Cypher interface failed or is unavailable
     +-- EmbeddingError              the embedding backend failed
     |    +-- EmbeddingDimensionError    a vector has the wrong number of dimensions
     +-- LLMError                    the chat model failed or answered badly

``ValueError`` and ``TypeError`` are left for arguments that misuse the API itself.
"""

from __future__ import annotations

from typing import Literal

from hello_pgmem.core.i18n import Language, say


class HelloPgmemError(Exception):
    """Base class of every error hello_pgmem raises on purpose."""


class ConfigurationError(HelloPgmemError):
    """A setting is missing or has an invalid value."""


class DatabaseUnavailableError(HelloPgmemError):
    """The PostgreSQL server cannot be reached or refused the connection."""


class DatabaseTimeoutError(HelloPgmemError):
    """A statement ran past ``PGMEM_STATEMENT_TIMEOUT_MS`` or waited for a lock past
    ``PGMEM_LOCK_TIMEOUT_MS``; its transaction was rolled back."""


class ReadOnlyError(HelloPgmemError):
    """A write was asked of a read-only store (``PGMEM_READ_ONLY``, the web view); PostgreSQL
    refused it and nothing was changed."""


class SchemaError(HelloPgmemError):
    """The database is reachable but not ready for hello_pgmem."""


class SchemaNotMigratedError(SchemaError):
    """The schema is missing or older than the code."""


class ExtensionMissingError(SchemaError):
    """A required PostgreSQL extension is not installed and cannot be created."""

    def __init__(self, message: str, statement: str | None = None) -> None:
        super().__init__(message)
        self.statement = statement


class InvalidInputError(HelloPgmemError):
    """Input breaks a rule. ``field`` names the input, ``rule`` says what it must be."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}")
        self.field = field
        self.rule = rule


class UnsupportedFormatError(InvalidInputError):
    """A file that is neither text nor a document format the converter reads: ingest skips it."""


class BusyError(HelloPgmemError):
    """A shared resource is at its limit for longer than the call may wait: try again later."""


class NotFoundError(HelloPgmemError):
    """No such object exists for the current user or namespace (raised by the command line, the
    tools and the web view; the Python API returns False, None or an empty result instead)."""


Thing = Literal["memory", "forgotten memory", "document", "entity", "namespace", "token"]
_THINGS_ZH: dict[Thing, str] = {
    "memory": "记忆",
    "forgotten memory": "被遗忘的记忆",
    "document": "文档",
    "entity": "实体",
    "namespace": "命名空间",
    "token": "令牌",
}


def no_such(thing: Thing, name: object, language: Language = "en") -> NotFoundError:
    """The one way every surface says that ``name`` names no ``thing`` of this user or namespace:
    ``no such memory: 3f2a…`` (``未找到记忆: 3f2a…``)."""
    shown = str(name)[:200]
    return NotFoundError(say(language, f"no such {thing}: {shown}", f"未找到{_THINGS_ZH[thing]}: {shown}"))


class GraphError(HelloPgmemError):
    """The Apache AGE graph interface failed or is not installed."""


class EmbeddingError(HelloPgmemError):
    """The embedding backend failed."""


class EmbeddingDimensionError(EmbeddingError):
    """A vector does not have the dimension its model is registered with."""


class LLMError(HelloPgmemError):
    """The chat model failed, timed out or returned output we cannot use."""
