"""Value models: MemoryItem, MemoryConfig and typed results. No database code here."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar
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

from hello_pgmem.core.errors import InvalidInputError

MemoryType = Literal["working", "episodic", "semantic", "perceptual"]
MEMORY_TYPES: tuple[MemoryType, ...] = ("working", "episodic", "semantic", "perceptual")
LONG_TERM_TYPES: tuple[MemoryType, ...] = ("episodic", "semantic", "perceptual")
DEFAULT_TYPES: tuple[MemoryType, ...] = ("working", "episodic", "semantic")
"""The types a store's memory has unless told (perceptual memory needs media encoders)."""
Scoring = Literal["hybrid", "lexical", "vector", "reference"]
SCORINGS: tuple[Scoring, ...] = ("hybrid", "lexical", "vector", "reference")
Fusion = Literal["weighted", "spread", "minmax", "rrf"]
VECTOR_WEIGHTS: dict[str, float] = {"weighted": 0.2, "spread": 0.5, "minmax": 1.0}
"""The vector's weight beside the lexical ranking's 0.8 in each weighted fusion (docs/search.md);
a spread search that asks for a count ranks by minmax at its weight."""
ForgetStrategy = Literal["importance_based", "time_based", "capacity_based"]
FORGET_STRATEGIES: tuple[ForgetStrategy, ...] = ("importance_based", "time_based", "capacity_based")
Modality = Literal["text", "image", "audio", "video"]
MODALITIES: tuple[Modality, ...] = ("text", "image", "audio", "video")
DEFAULT_MAX_CONTENT_CHARS = 20_000
MAX_SESSION_MEMORIES = 1000
"""The most memories of one session a read returns."""
MAX_AGE_DAYS = 36500
MAX_USER_ID_CHARS = 255


def utcnow() -> datetime:
    return datetime.now(UTC)


def check_user_id(user_id: object) -> str:
    """Return ``user_id`` if it is a usable owner key, else raise InvalidInputError."""
    if not isinstance(user_id, str) or not user_id.strip():
        raise InvalidInputError("user_id", "must be a non-empty string")
    if len(user_id) > MAX_USER_ID_CHARS:
        raise InvalidInputError("user_id", f"must be at most {MAX_USER_ID_CHARS} characters")
    if any(ord(ch) < 32 for ch in user_id) or "\x00" in user_id:
        raise InvalidInputError("user_id", "must not contain control characters")
    return user_id


def check_content(content: object, max_chars: int = DEFAULT_MAX_CONTENT_CHARS, field: str = "content") -> str:
    """Return ``content`` if it is non-blank text within the size limit that PostgreSQL can store
    (no NUL character, no lone surrogate)."""
    if not isinstance(content, str):
        raise InvalidInputError(field, "must be a string")
    if not content.strip():
        raise InvalidInputError(field, "must not be empty or whitespace")
    if "\x00" in content:
        raise InvalidInputError(field, "must not contain NUL characters")
    if len(content) > max_chars:
        raise InvalidInputError(field, f"must be at most {max_chars} characters, got {len(content)}")
    try:
        content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(field, "must be valid Unicode (no lone surrogates)") from exc
    return content


def check_importance(importance: object, field: str = "importance") -> float:
    """Return ``importance`` as a float in [0, 1]; NaN, infinities and booleans are refused."""
    if isinstance(importance, bool) or not isinstance(importance, int | float):
        raise InvalidInputError(field, "must be a number between 0 and 1")
    value = float(importance)
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise InvalidInputError(field, f"must be a number between 0 and 1, got {importance!r}")
    return value


def check_modality(value: object, field: str = "modality") -> Modality:
    """Return ``value`` if it names a modality."""
    if value not in MODALITIES:
        raise InvalidInputError(field, f"must be one of {', '.join(MODALITIES)}, got {value!r}")
    return value


def check_memory_type(value: object, field: str = "memory_type") -> MemoryType:
    """Return ``value`` if it names a memory type."""
    if value not in MEMORY_TYPES:
        raise InvalidInputError(field, f"must be one of {', '.join(MEMORY_TYPES)}, got {value!r}")
    return value


MAX_BATCH = 10_000


def check_batch(
    memory_type: object,
    contents: object,
    importance: object,
    metadata: object,
    max_chars: int = DEFAULT_MAX_CONTENT_CHARS,
    maximum: int = MAX_BATCH,
) -> tuple[MemoryType, list[tuple[str, float | None, dict[str, Any]]]]:
    """The type and (content, importance or None, metadata) of each memory of a batch add."""
    kind = check_memory_type(memory_type)
    if kind == "working":
        raise InvalidInputError(
            "memory_type", "the batch API takes long-term types; add working memory one by one"
        )
    if (
        isinstance(contents, str)
        or not isinstance(contents, list | tuple)
        or not 1 <= len(contents) <= maximum
    ):
        raise InvalidInputError("contents", f"must hold between 1 and {maximum} memories")
    if metadata is not None and not isinstance(metadata, list | tuple):
        raise InvalidInputError("metadata", "must be a list with one dict per content")
    metas = (
        [{} for _ in contents]
        if metadata is None
        else [check_metadata(m, f"metadata[{i}]") for i, m in enumerate(metadata)]
    )
    if len(metas) != len(contents):
        raise InvalidInputError("metadata", "must have one entry per content")
    if importance is None or isinstance(importance, int | float):
        values = [None if importance is None else check_importance(importance)] * len(contents)
    elif isinstance(importance, list | tuple):
        values = [check_importance(v, f"importance[{i}]") for i, v in enumerate(importance)]
    else:
        raise InvalidInputError("importance", "must be one number, or one per content")
    if len(values) != len(contents):
        raise InvalidInputError("importance", "must be one number, or one per content")
    texts = [check_content(text, max_chars, f"contents[{i}]") for i, text in enumerate(contents)]
    return kind, list(zip(texts, values, metas, strict=True))


def check_update(
    content: object, importance: object, metadata: object, max_chars: int
) -> tuple[str | None, float | None, dict[str, Any] | None]:
    """The checked changes of an update; at least one must be given."""
    if content is None and importance is None and metadata is None:
        raise InvalidInputError("content", "give content, importance or metadata to update")
    return (
        None if content is None else check_content(content, max_chars),
        None if importance is None else check_importance(importance),
        None if metadata is None else check_metadata(metadata),
    )


def check_limit(limit: object, maximum: int, field: str = "limit") -> int:
    """Return ``limit`` if it is an integer (not a boolean) between 1 and ``maximum``."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= maximum:
        raise InvalidInputError(field, f"must be an integer between 1 and {maximum}")
    return limit


def check_scoring(scoring: object, field: str = "scoring") -> Scoring:
    """Return ``scoring`` if it names a scoring mode (hybrid, lexical, vector or reference)."""
    if scoring not in SCORINGS:
        raise InvalidInputError(field, f"must be one of {', '.join(SCORINGS)}, got {scoring!r}")
    return scoring


def check_timestamp(value: object, field: str = "timestamp") -> datetime:
    """An event time: a timezone-aware datetime, or ISO 8601 text with an offset."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError as exc:
            raise InvalidInputError(field, f"must be an ISO 8601 date and time, got {value!r}") from exc
    if not isinstance(value, datetime):
        raise InvalidInputError(field, "must be a datetime or ISO 8601 text")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(field, "must carry a timezone (e.g. 2023-05-08T13:56:00+00:00)")
    return value


def check_timestamps(values: object, count: int, default: datetime) -> list[datetime]:
    """One event time per memory of a batch (``default`` for all when ``values`` is None)."""
    if values is None:
        return [default] * count
    if isinstance(values, str) or not isinstance(values, list | tuple) or len(values) != count:
        raise InvalidInputError("timestamps", "must have one entry per content")
    return [check_timestamp(value, f"timestamps[{i}]") for i, value in enumerate(values)]


def check_strategy(strategy: object) -> ForgetStrategy:
    if strategy not in FORGET_STRATEGIES:
        raise InvalidInputError(
            "strategy", f"must be one of {', '.join(FORGET_STRATEGIES)}, got {strategy!r}"
        )
    return strategy


def check_days(days: object, field: str = "max_age_days") -> float:
    """Return ``days`` if it is a number of days between 0 and ``MAX_AGE_DAYS``."""
    if isinstance(days, bool) or not isinstance(days, int | float) or not 0 <= days <= MAX_AGE_DAYS:
        raise InvalidInputError(field, f"must be a number between 0 and {MAX_AGE_DAYS}")
    return float(days)


def check_entity_name(value: object, field: str = "entity") -> str:
    """An entity name: non-blank text of at most 200 characters PostgreSQL can store."""
    return check_content(value, 200, field)


def check_name(value: object, field: str) -> str:
    """A namespace or document id: non-empty text of at most 255 characters, no control characters."""
    name = check_content(value, 255, field)
    if any(ord(ch) < 32 for ch in name):
        raise InvalidInputError(field, "must not contain control characters")
    return name


MAX_METADATA_DEPTH = 32


def check_session_id(value: object, field: str = "session_id") -> str | None:
    """A session id (or None): text of at most 255 characters without control characters."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(field, "must be a non-empty string or None")
    if len(value) > 255:
        raise InvalidInputError(field, "must be at most 255 characters")
    if any(ord(ch) < 32 for ch in value):
        raise InvalidInputError(field, "must not contain control characters (NUL included)")
    return value


def _depth(value: object) -> int:
    """How deeply lists and dicts nest in ``value`` (counted without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            deepest = max(deepest, depth)
            if depth <= MAX_METADATA_DEPTH:
                stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def check_metadata(metadata: object, field: str = "metadata") -> dict[str, Any]:
    """Return ``metadata`` if it is a JSON object (string keys, finite numbers, valid text) that
    nests at most ``MAX_METADATA_DEPTH`` levels."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInputError(field, "must be a JSON object (a dict)")
    if _depth(metadata) > MAX_METADATA_DEPTH:
        raise InvalidInputError(field, f"may nest at most {MAX_METADATA_DEPTH} levels of objects and lists")
    try:
        text = json.dumps(metadata, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(field, f"must be JSON-serialisable without NaN: {exc}") from exc
    if "\\u0000" in text:
        raise InvalidInputError(field, "must not contain NUL characters")
    result: dict[str, Any] = json.loads(text)
    return result


class MemoryItem(BaseModel):
    """One memory. A search result also carries its ``score`` and each of its ``components``
    (the columns the SQL ranking returns: ``vector_score``, ``text_score``, …)."""

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
