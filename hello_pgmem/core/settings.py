"""Settings read from environment variables and an optional ``.env`` file.

Names follow the reference implementation where it has them (``EMBED_*``, ``LLM_*``);
ours are prefixed ``PGMEM_``.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import AliasChoices, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEVELOPMENT_PORT = 55432
DEVELOPMENT_DATABASE = "pgmem"


def development_url(port: int = DEVELOPMENT_PORT, database: str = DEVELOPMENT_DATABASE) -> str:
    """The development server's URL (``scripts/devdb``): 127.0.0.1, ``port``, ``database``."""
    return f"postgresql://postgres@127.0.0.1:{port}/{database}"


def check_identifier(value: str, field: str) -> str:
    """Return ``value`` if it is a plain SQL identifier, else raise ``ValueError``."""
    if not IDENTIFIER.match(value) or len(value) > 63:
        raise ValueError(
            f"{field} must match ^[A-Za-z_][A-Za-z0-9_]*$ and be at most 63 characters, got {value!r}"
        )
    return value


EARLIER_QUEUE_NAMES = {
    "WORKERS": ("PGMEM_EMBED_WORKERS", "embed_workers"),
    "SHORT_CHARS": ("PGMEM_EMBED_SHORT_CHARS", "embed_short_chars"),
    "LEASE": ("PGMEM_EMBED_LEASE", "embed_lease_s"),
    "RETRY": ("PGMEM_EMBED_RETRY", "embed_retry_s"),
    "RETRY_MAX": ("PGMEM_EMBED_RETRY_MAX", "embed_retry_max_s"),
    "POLL": ("PGMEM_EMBED_POLL", "embed_poll_s"),
    "MAX_ROWS": ("PGMEM_QUEUE_MAX_ROWS", "queue_max_rows"),
}
"""The variable and field each embedding queue setting is also read by (docs/configuration.md)."""


def _queue_names(suffix: str) -> AliasChoices:
    """An embedding queue setting's names: ``PGMEM_EMBEDDING_QUEUE_<suffix>`` first, then its
    earlier variable and field."""
    return AliasChoices(f"PGMEM_EMBEDDING_QUEUE_{suffix}", *EARLIER_QUEUE_NAMES[suffix])


class Settings(BaseSettings):
    """Process-wide configuration. Build one with ``Settings()``; nothing is read at import."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=True)

    database_url: str = Field(default="", validation_alias=AliasChoices("DATABASE_URL"))
    """Where the store lives; without it, the development server's database (PGMEM_PORT, PGMEM_DB)."""
    dev_port: int = Field(
        default=DEVELOPMENT_PORT, ge=1, le=65535, validation_alias=AliasChoices("PGMEM_PORT")
    )
    dev_database: str = Field(default=DEVELOPMENT_DATABASE, validation_alias=AliasChoices("PGMEM_DB"))
    schema_name: str = Field(default="pgmem", validation_alias=AliasChoices("PGMEM_SCHEMA"))
    graph_name: str = Field(default="pgmem_graph", validation_alias=AliasChoices("PGMEM_GRAPH"))
    cypher_role: str = Field(
        default="pgmem_cypher_reader", validation_alias=AliasChoices("PGMEM_CYPHER_ROLE")
    )
    age: Literal["auto", "on", "off"] = Field(default="auto", validation_alias=AliasChoices("PGMEM_AGE"))
    language: Literal["en", "zh"] = Field(default="en", validation_alias=AliasChoices("PGMEM_LANGUAGE"))
    read_only: bool = Field(default=False, validation_alias=AliasChoices("PGMEM_READ_ONLY"))
    """Every transaction of the pool is READ ONLY (default_transaction_read_only): the web view."""
    pool_min_size: int = Field(default=1, ge=0, validation_alias=AliasChoices("PGMEM_POOL_MIN"))
    pool_max_size: int = Field(default=10, ge=1, validation_alias=AliasChoices("PGMEM_POOL_MAX"))
    connect_timeout_s: float = Field(
        default=5.0, gt=0, validation_alias=AliasChoices("PGMEM_CONNECT_TIMEOUT")
    )
    statement_timeout_ms: int = Field(
        default=30_000, ge=0, validation_alias=AliasChoices("PGMEM_STATEMENT_TIMEOUT_MS")
    )
    cypher_timeout_ms: int = Field(
        default=10_000, ge=1, le=600_000, validation_alias=AliasChoices("PGMEM_CYPHER_TIMEOUT_MS")
    )
    """How long a caller's Cypher query (the passthrough) may run."""
    lock_timeout_ms: int = Field(default=5_000, ge=0, validation_alias=AliasChoices("PGMEM_LOCK_TIMEOUT_MS"))
    retries: int = Field(default=3, ge=0, le=10, validation_alias=AliasChoices("PGMEM_RETRIES"))
    hnsw_m: int = Field(default=16, ge=2, le=100, validation_alias=AliasChoices("PGMEM_HNSW_M"))
    hnsw_ef_construction: int = Field(
        default=64, ge=4, le=1000, validation_alias=AliasChoices("PGMEM_HNSW_EF_CONSTRUCTION")
    )

    embed_model_type: str = Field(default="auto", validation_alias=AliasChoices("EMBED_MODEL_TYPE"))
    embed_model_name: str | None = Field(default=None, validation_alias=AliasChoices("EMBED_MODEL_NAME"))
    embed_api_key: str | None = Field(default=None, validation_alias=AliasChoices("EMBED_API_KEY"))
    embed_base_url: str | None = Field(default=None, validation_alias=AliasChoices("EMBED_BASE_URL"))
    embed_dimension: int | None = Field(
        default=None, ge=1, le=4000, validation_alias=AliasChoices("EMBED_DIMENSION")
    )
    embed_batch_size: int = Field(
        default=10, ge=1, le=2048, validation_alias=AliasChoices("EMBED_BATCH_SIZE")
    )
    embed_timeout_s: float = Field(default=30.0, gt=0, validation_alias=AliasChoices("EMBED_TIMEOUT"))
    embed_max_retries: int = Field(default=3, ge=0, le=10, validation_alias=AliasChoices("EMBED_MAX_RETRIES"))
    embed_hash_dimension: int = Field(
        default=384, ge=8, le=4000, validation_alias=AliasChoices("EMBED_HASH_DIMENSION")
    )
    embed_query_prefix: str | None = Field(default=None, validation_alias=AliasChoices("EMBED_QUERY_PREFIX"))
    embed_document_prefix: str | None = Field(
        default=None, validation_alias=AliasChoices("EMBED_DOCUMENT_PREFIX")
    )
    embed_input_types: str | None = Field(default=None, validation_alias=AliasChoices("EMBED_INPUT_TYPES"))

    embed: Literal["auto", "queue", "now"] = Field(
        default="auto", validation_alias=AliasChoices("PGMEM_EMBED")
    )
    """When a write's vectors are made: ``queue`` by workers after the write (the row is found by its
    words at once, by meaning when its vector arrives), ``now`` in the write itself, before its
    transaction; ``auto`` queues for every embedder but the hashing one, which takes microseconds."""
    embedding_queue_workers: int = Field(default=1, ge=0, le=16, validation_alias=_queue_names("WORKERS"))
    """Embedding worker threads a process starts on its first queued write (0: none; run
    ``hello-pgmem worker`` apart)."""
    embedding_queue_short_chars: int = Field(
        default=2_000, ge=0, le=1_000_000, validation_alias=_queue_names("SHORT_CHARS")
    )
    """The workers' short lane: one more thread per model that embeds only parts of at most this
    many characters, so that a short text never waits behind a long one in flight (0: no lane)."""
    embedding_queue_lease_s: float = Field(
        default=120.0, ge=5, le=3600, validation_alias=_queue_names("LEASE")
    )
    """How long a worker holds the rows it claimed: a dead worker's rows come back after it."""
    embedding_queue_retry_s: float = Field(default=2.0, gt=0, le=3600, validation_alias=_queue_names("RETRY"))
    """The first back-off of a row whose embedding failed; it doubles with each failure, up to
    ``embedding_queue_retry_max_s``."""
    embedding_queue_retry_max_s: float = Field(
        default=300.0, gt=0, le=86400, validation_alias=_queue_names("RETRY_MAX")
    )
    """The longest back-off of a failing row."""
    embedding_queue_poll_s: float = Field(default=5.0, gt=0, le=600, validation_alias=_queue_names("POLL"))
    """How often an idle worker looks at the queue without being told (retry times, leases that ended)."""
    embedding_queue_max_rows: int = Field(
        default=100_000, ge=0, le=100_000_000, validation_alias=_queue_names("MAX_ROWS")
    )
    """The most rows one user (or namespace) may have waiting for their vectors: a write that
    queues past it is refused whole until the workers catch up (0: no quota)."""
    search_catch_up: int = Field(
        default=16, ge=0, le=256, validation_alias=AliasChoices("PGMEM_SEARCH_CATCH_UP")
    )
    """A search embeds its scope's queued rows itself when at most this many wait (and they never
    failed), so what a user just wrote is found by meaning at once; 0: never."""
    search_catch_up_chars: int = Field(
        default=4000, ge=0, le=200_000, validation_alias=AliasChoices("PGMEM_SEARCH_CATCH_UP_CHARS")
    )
    """The most characters a search's catch-up embeds (the queued texts beyond wait for a worker)."""

    history_days: int = Field(
        default=365, ge=1, le=36500, validation_alias=AliasChoices("PGMEM_HISTORY_DAYS")
    )
    """How long ``maintain`` keeps the earlier versions of memories (days since they were retired)."""
    retrieval_log: bool = Field(default=False, validation_alias=AliasChoices("PGMEM_RETRIEVAL_LOG"))
    retrieval_log_days: int = Field(
        default=30, ge=1, le=3650, validation_alias=AliasChoices("PGMEM_RETRIEVAL_LOG_DAYS")
    )

    rerank_base_url: str | None = Field(default=None, validation_alias=AliasChoices("RERANK_BASE_URL"))
    rerank_model: str | None = Field(default=None, validation_alias=AliasChoices("RERANK_MODEL"))
    rerank_api_key: str | None = Field(default=None, validation_alias=AliasChoices("RERANK_API_KEY"))
    rerank_top_n: int = Field(default=50, ge=1, le=200, validation_alias=AliasChoices("RERANK_TOP_N"))
    rerank_timeout_s: float = Field(default=30.0, gt=0, validation_alias=AliasChoices("RERANK_TIMEOUT"))

    llm_model_id: str | None = Field(default=None, validation_alias=AliasChoices("LLM_MODEL_ID"))
    llm_api_key: str | None = Field(default=None, validation_alias=AliasChoices("LLM_API_KEY"))
    llm_base_url: str | None = Field(default=None, validation_alias=AliasChoices("LLM_BASE_URL"))
    llm_timeout_s: float = Field(default=60.0, gt=0, validation_alias=AliasChoices("LLM_TIMEOUT"))
    llm_max_retries: int = Field(default=2, ge=0, le=10, validation_alias=AliasChoices("LLM_MAX_RETRIES"))

    @field_validator("database_url")
    @classmethod
    def _database_url_parses(cls, value: str) -> str:
        import psycopg
        from psycopg import conninfo

        try:
            conninfo.conninfo_to_dict(value)
        except psycopg.Error as exc:
            reason = str(exc).strip()
            rule = f"DATABASE_URL must be a postgresql:// URL or key=value string ({reason})"
            raise ValueError(rule) from exc
        return value

    @field_validator("dev_database")
    @classmethod
    def _dev_database_is_identifier(cls, value: str) -> str:
        return check_identifier(value, "PGMEM_DB")

    @model_validator(mode="after")
    def _development_server_by_default(self) -> Settings:
        if not self.database_url:
            self.database_url = development_url(self.dev_port, self.dev_database)
        return self

    @property
    def on_development_server(self) -> bool:
        """Whether the URL is the development server's, as PGMEM_PORT and PGMEM_DB name it."""
        return self.database_url == development_url(self.dev_port, self.dev_database)

    @field_validator("schema_name")
    @classmethod
    def _schema_is_identifier(cls, value: str) -> str:
        return check_identifier(value, "PGMEM_SCHEMA")

    @field_validator("graph_name")
    @classmethod
    def _graph_is_identifier(cls, value: str) -> str:
        return check_identifier(value, "PGMEM_GRAPH")

    @field_validator("cypher_role")
    @classmethod
    def _cypher_role_is_identifier(cls, value: str) -> str:
        return check_identifier(value, "PGMEM_CYPHER_ROLE")
