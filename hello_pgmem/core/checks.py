"""Input checks: the rules every argument of the API is held to, each a function that returns the
value (normalised where it says so) or raises InvalidInputError naming the field and the rule; and
the names the rules speak of (memory types, scorings, modalities). No database code here."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from hello_pgmem.core.errors import InvalidInputError

MemoryType = Literal["working", "episodic", "semantic", "perceptual"]
MEMORY_TYPES: tuple[MemoryType, ...] = ("working", "episodic", "semantic", "perceptual")
LONG_TERM_TYPES: tuple[MemoryType, ...] = ("episodic", "semantic", "perceptual")
DEFAULT_TYPES: tuple[MemoryType, ...] = ("working", "episodic", "semantic")
"""The types a store's memory has unless told (perceptual memory needs media encoders)."""
Scoring = Literal["hybrid", "lexical", "vector", "reference"]
SCORINGS: tuple[Scoring, ...] = ("hybrid", "lexical", "vector", "reference")
Fusion = Literal["weighted", "spread", "minmax", "rrf"]
"""How the hybrid search fuses its branches (docs/search.md); each fusion's vector weight is
``ranking_weights()``'s in the database."""
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
    check_unicode(user_id, "user_id")
    return user_id


def check_unicode(text: str, field: str) -> str:
    """``text`` if PostgreSQL can store it (UTF-8: no lone surrogate), else InvalidInputError."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(field, "must be valid Unicode (no lone surrogates)") from exc
    return text


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
    return check_unicode(content, field)


def check_flag(value: object, field: str) -> bool:
    """Return ``value`` if it is True or False: a string such as "false" is refused, not taken as true."""
    if not isinstance(value, bool):
        raise InvalidInputError(field, f"must be true or false, got {type(value).__name__}")
    return value


def check_importance(importance: object, field: str = "importance") -> float:
    """Return ``importance`` as a float in [0, 1]; NaN, infinities and booleans are refused."""
    if isinstance(importance, bool) or not isinstance(importance, int | float):
        raise InvalidInputError(field, "must be a number between 0 and 1")
    value = float(importance)
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise InvalidInputError(field, f"must be a number between 0 and 1, got {importance!r}")
    return value


Choice = TypeVar("Choice", bound=str)


def check_choice(value: object, choices: tuple[Choice, ...], field: str) -> Choice:
    """Return ``value`` if it is one of ``choices``."""
    for choice in choices:
        if value == choice:
            return choice
    raise InvalidInputError(field, f"must be one of {', '.join(choices)}, got {value!r}")


def check_modality(value: object, field: str = "modality") -> Modality:
    """Return ``value`` if it names a modality."""
    return check_choice(value, MODALITIES, field)


def check_memory_type(value: object, field: str = "memory_type") -> MemoryType:
    """Return ``value`` if it names a memory type."""
    return check_choice(value, MEMORY_TYPES, field)


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
    return check_choice(scoring, SCORINGS, field)


EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
LATEST = datetime(9999, 12, 30, 23, 59, 59, tzinfo=UTC)
"""The times a memory may carry: a day inside the years 1 to 9999 wherever it is read (a time
outside them is stored by PostgreSQL and then read by no client)."""


def check_timestamp(value: object, field: str = "timestamp") -> datetime:
    """An event time: a timezone-aware datetime, or ISO 8601 text with an offset, between
    ``EARLIEST`` and ``LATEST``."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError as exc:
            raise InvalidInputError(field, f"must be an ISO 8601 date and time, got {value!r}") from exc
    if not isinstance(value, datetime):
        raise InvalidInputError(field, "must be a datetime or ISO 8601 text")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(field, "must carry a timezone (e.g. 2023-05-08T13:56:00+00:00)")
    try:
        within = EARLIEST <= value <= LATEST
    except OverflowError:
        within = False
    if not within:
        raise InvalidInputError(
            field, f"must lie between {EARLIEST.date()} and {LATEST.date()} (UTC), got {value.isoformat()}"
        )
    return value


def check_timestamps(values: object, count: int, default: datetime) -> list[datetime]:
    """One event time per memory of a batch (``default`` for all when ``values`` is None)."""
    if values is None:
        return [default] * count
    if isinstance(values, str) or not isinstance(values, list | tuple) or len(values) != count:
        raise InvalidInputError("timestamps", "must have one entry per content")
    return [check_timestamp(value, f"timestamps[{i}]") for i, value in enumerate(values)]


def check_strategy(strategy: object) -> ForgetStrategy:
    return check_choice(strategy, FORGET_STRATEGIES, "strategy")


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
    return check_unicode(value, field)


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
