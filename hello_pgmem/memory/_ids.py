"""Finding one memory: by id as users type it (a full UUID, or an unambiguous prefix of at least 8
characters), by id of any type, or by a metadata value. None, never an error, when there is none."""

from __future__ import annotations

import re
from uuid import UUID

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import MemoryItem
from hello_pgmem.db import Conn
from hello_pgmem.memory import _queries as q
from hello_pgmem.memory._rows import FIELDS, memory_from_row
from hello_pgmem.memory._working import WorkingMemory

MIN_PREFIX = 8
_HEX_PREFIX = re.compile(r"^[0-9a-f-]+$")
_FULL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}")


def as_uuid(memory_id: UUID | str) -> UUID:
    """``memory_id`` as a UUID, or InvalidInputError naming the field."""
    if isinstance(memory_id, UUID):
        return memory_id
    try:
        return UUID(str(memory_id))
    except ValueError as exc:
        raise InvalidInputError("memory_id", f"must be a UUID, got {memory_id!r}") from exc


def memory_of(conn: Conn, user_id: str, memory_id: UUID) -> UUID:
    """The memory ``memory_id`` names: the one it is an earlier version of, else itself."""
    row = conn.execute(q.MEMORY_OF, {"user_id": user_id, "id": memory_id}).fetchone()
    return memory_id if row is None else UUID(str(row[0]))


def resolve(conn: Conn, working: WorkingMemory, text: object, forgotten: bool = False) -> UUID | None:
    """The memory ``text`` names: a full id, or the one memory of the user whose id starts with
    ``text`` (``forgotten``: among the forgotten ones); the id (or prefix) of an earlier version
    names the memory it belongs to. None when it names none."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError("memory_id", "must be a memory id")
    candidate = text.strip().lower()
    if _FULL_UUID.fullmatch(candidate) and not forgotten:
        return memory_of(conn, working.user_id, UUID(candidate))
    if _FULL_UUID.fullmatch(candidate):
        candidate = str(UUID(candidate))
    elif len(candidate) < MIN_PREFIX or not _HEX_PREFIX.match(candidate):
        raise InvalidInputError(
            "memory_id", f"must be a full id or a prefix of at least {MIN_PREFIX} hex characters"
        )
    params = {"user_id": working.user_id, "prefix": candidate}
    if forgotten:
        found = [row[0] for row in conn.execute(q.FORGOTTEN_WITH_PREFIX, params).fetchall()]
    else:
        found = [row[0] for row in conn.execute(q.IDS_WITH_PREFIX, params).fetchall()]
        found += working.ids_with_prefix(conn, candidate)
    if not found:
        return None
    if len(found) > 1:
        raise InvalidInputError(
            "memory_id", f"prefix {candidate!r} matches several memories: give more characters"
        )
    memory_id: UUID = found[0]
    return memory_id


def locate(conn: Conn, working: WorkingMemory, memory_id: UUID) -> str | None:
    """The type of the user's live memory ``memory_id`` ("working" included), or None."""
    row = conn.execute(q.TYPE_OF, {"user_id": working.user_id, "id": memory_id}).fetchone()
    if row is not None:
        return str(row[0])
    return "working" if working.get_in(conn, memory_id) is not None else None


def get(conn: Conn, working: WorkingMemory, memory_id: UUID) -> MemoryItem | None:
    """The user's live memory ``memory_id`` of any type, or None."""
    row = conn.execute(q.GET, {"user_id": working.user_id, "id": memory_id}).fetchone()
    return memory_from_row(working.user_id, FIELDS, row) if row else working.get_in(conn, memory_id)


def find_by_metadata(conn: Conn, user_id: str, key: str, value: str) -> list[UUID]:
    """Ids of the user's live long-term memories whose ``metadata[key]`` equals ``value``."""
    rows = conn.execute(q.FIND_BY_METADATA, {"user_id": user_id, "key": key, "value": value}).fetchall()
    return [row[0] for row in rows]
