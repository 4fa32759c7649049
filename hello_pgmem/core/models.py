"""Value models: MemoryItem, MemoryConfig and typed results (the checks they hold their fields to are
:mod:`hello_pgmem.core.checks`, whose names are re-exported here). No database code here."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID, uuid4

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)
from pydantic import ValidationError as PydanticValidationError

from hello_pgmem.core.checks import (
    DEFAULT_MAX_CONTENT_CHARS,
    DEFAULT_TYPES,
    FORGET_STRATEGIES,
    LONG_TERM_TYPES,
    MAX_AGE_DAYS,
    MAX_BATCH,
    MAX_METADATA_DEPTH,
    MAX_SESSION_MEMORIES,
    MAX_USER_ID_CHARS,
    MEMORY_TYPES,
    MODALITIES,
    SCORINGS,
    ForgetStrategy,
    Fusion,
    MemoryType,
    Modality,
    Scoring,
    check_batch,
    check_content,
    check_days,
    check_entity_name,
    check_importance,
    check_limit,
    check_memory_type,
    check_metadata,
    check_modality,
    check_name,
    check_scoring,
    check_session_id,
    check_strategy,
    check_timestamp,
    check_timestamps,
    check_unicode,
    check_update,
    check_user_id,
    utcnow,
)
from hello_pgmem.core.compat import accepted_without_effect
from hello_pgmem.core.errors import InvalidInputError


class MemoryItem(BaseModel):
    """One memory. A search result also carries its ``score`` and each of its ``components``
    (the columns the SQL ranking returns: ``vector_score``, ``text_score``, …). A hit of an as-of
    search that is an earlier version of memory ``id`` names that version: ``version_id``."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    id: UUID = Field(default_factory=uuid4)
    content: str
    memory_type: MemoryType
    user_id: str
    timestamp: AwareDatetime = Field(default_factory=utcnow)
    importance: float = Field(default=0.5, ge=0.0, le=1.0, allow_inf_nan=False)
    metadata: dict[str, Any] = Field(default_factory=dict)
    session_id: str | None = None
    modality: str | None = None
    score: float | None = None
    components: dict[str, float] = Field(default_factory=dict)
    version_id: UUID | None = None

    @field_validator("content")
    @classmethod
    def _content_rules(cls, value: str, info: ValidationInfo) -> str:
        limit = (info.context or {}).get("max_content_chars", DEFAULT_MAX_CONTENT_CHARS)
        return _as_pydantic(lambda: check_content(value, limit))

    @field_validator("user_id")
    @classmethod
    def _user_rules(cls, value: str) -> str:
        return _as_pydantic(lambda: check_user_id(value))

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata_rules(cls, value: object) -> dict[str, Any]:
        return _as_pydantic(lambda: check_metadata(value))

    @classmethod
    def build(cls, max_content_chars: int = DEFAULT_MAX_CONTENT_CHARS, **fields: Any) -> MemoryItem:
        """Validate ``fields``; errors become our InvalidInputError naming the field and rule."""
        try:
            return cls.model_validate(fields, context={"max_content_chars": max_content_chars})
        except PydanticValidationError as exc:
            raise validation_error(exc) from exc


T = TypeVar("T")


def _as_pydantic(check: Callable[[], T]) -> T:
    try:
        return check()
    except InvalidInputError as exc:
        raise ValueError(exc.rule) from exc


def validation_error(exc: PydanticValidationError) -> InvalidInputError:
    """The first problem of a pydantic error as our InvalidInputError."""
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "input"
    message = str(first["msg"]).removeprefix("Value error, ")
    return InvalidInputError(field, message)


class MemoryConfig(BaseModel):
    """The reference's knobs and defaults, plus ours. Storage is always the database."""

    model_config = ConfigDict(extra="forbid")

    storage_path: str | None = None  # the reference's folder; accepted, without effect (warned once)
    max_capacity: int = Field(default=100, ge=1)
    importance_threshold: float = Field(default=0.1, ge=0.0, le=1.0)
    decay_factor: float = Field(default=0.95, gt=0.0, le=1.0)
    working_memory_capacity: int = Field(default=10, ge=1)
    working_memory_tokens: int = Field(default=2000, ge=1)
    working_memory_ttl_minutes: int = Field(default=120, ge=1)
    perceptual_memory_modalities: list[Modality] = Field(default_factory=lambda: list(MODALITIES))
    # ours: where the memories live and how they are embedded; None means "from the environment"
    database_url: str | None = None
    schema_name: str | None = None
    graph_name: str | None = None
    embed_model_type: str | None = None
    embed_model_name: str | None = None
    max_content_chars: int = Field(default=DEFAULT_MAX_CONTENT_CHARS, ge=1, le=1_000_000)
    candidate_multiplier: int = Field(default=5, ge=1, le=50)
    max_search_limit: int = Field(default=200, ge=1, le=1000)
    # ranking (docs/search.md): hybrid (lexical + vector, relevance first) unless "reference"
    scoring: Scoring = "hybrid"
    fusion: Fusion | None = None  # None: the embedder's (spread, or weighted for the hashing embedder)
    vector_weight: float | None = Field(default=None, ge=0.0, le=10.0)  # None: the fusion's (docs/search.md)
    graph_search: bool = True  # expand semantic searches through the entities a query names

    @field_validator("storage_path")
    @classmethod
    def _storage_is_the_database(cls, value: str | None) -> str | None:
        if value is not None:
            accepted_without_effect("MemoryConfig.storage_path", "memories live in PostgreSQL (database_url)")
        return value

    def settings_overrides(self) -> dict[str, Any]:
        """The Settings fields this config sets (those not None)."""
        names = ("database_url", "schema_name", "graph_name", "embed_model_type", "embed_model_name")
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}


class TypeStats(BaseModel):
    """Counts for one memory type of one user."""

    memory_type: MemoryType
    count: int
    forgotten_count: int = 0
    avg_importance: float = 0.0
    total_tokens: int | None = None
    sessions_count: int | None = None
    in_session: int | None = None  # working memory: the items of the current session
    oldest: datetime | None = None
    newest: datetime | None = None


class MemoryStats(BaseModel):
    """What ``MemoryManager.get_memory_stats`` returns."""

    user_id: str
    enabled_types: list[MemoryType]
    total_memories: int
    memories_by_type: dict[str, TypeStats]
    config: dict[str, Any]


class SessionInfo(BaseModel):
    """One session of a user's episodic memory."""

    session_id: str
    episodes: int
    first_at: datetime
    last_at: datetime


__all__ = [
    "DEFAULT_MAX_CONTENT_CHARS",
    "DEFAULT_TYPES",
    "FORGET_STRATEGIES",
    "LONG_TERM_TYPES",
    "MAX_AGE_DAYS",
    "MAX_BATCH",
    "MAX_METADATA_DEPTH",
    "MAX_SESSION_MEMORIES",
    "MAX_USER_ID_CHARS",
    "MEMORY_TYPES",
    "MODALITIES",
    "SCORINGS",
    "ForgetStrategy",
    "Fusion",
    "MemoryConfig",
    "MemoryItem",
    "MemoryStats",
    "MemoryType",
    "Modality",
    "Scoring",
    "SessionInfo",
    "TypeStats",
    "check_batch",
    "check_content",
    "check_days",
    "check_entity_name",
    "check_importance",
    "check_limit",
    "check_memory_type",
    "check_metadata",
    "check_modality",
    "check_name",
    "check_scoring",
    "check_session_id",
    "check_strategy",
    "check_timestamp",
    "check_timestamps",
    "check_unicode",
    "check_update",
    "check_user_id",
    "utcnow",
    "validation_error",
]
