"""Earlier versions of a memory, kept when its content is replaced: the version as it was
recorded, retired (``superseded_at``), and — when the world changed rather than the store was
wrong — the same fact closed where the new one starts (``valid_to``), as the store now knows it.
Both are rows of ``memories`` with ``version_of`` naming the memory, retired from search, with
copies of the memory's mentions and relations carrying the same clocks.

    update (the world changed at t):  old  [valid from, ∞)  recorded [r0, now)    retired
                                      old  [valid from, t)  recorded [now, ∞)     closed
                                      new  [t, ∞)           recorded [now, ∞)     the memory itself
    correction (the store was wrong): old  [valid from, ∞)  recorded [r0, now)    retired
                                      new  [valid from, ∞)  recorded [now, ∞)     the memory itself
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb
from pydantic import BaseModel

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.db import Conn

_COLUMNS = """memory_type, content, importance, session_id, modality, metadata, created_at, updated_at,
    last_accessed_at, access_count, embedding, embedding_model, text_embedding, text_embedding_model,
    text_config"""

# The memory is locked first, so that of two concurrent replacements the second keeps the first's
# content, not the one both started from (a statement of its own: Citus takes no FOR UPDATE in
# an INSERT … SELECT).
LOCK = """
SELECT 1 FROM memories
WHERE user_id = %(user_id)s AND id = %(id)s AND version_of IS NULL AND forgotten_at IS NULL
FOR UPDATE
"""

# The version as recorded until now: retired now, with why (``replaced_because``) in its metadata.
RETIRE = f"""
INSERT INTO memories (user_id, id, version_of, recorded_at, superseded_at, valid_to, forgotten_at, {_COLUMNS})
SELECT user_id, gen_random_uuid(), id, recorded_at, greatest(now(), recorded_at), valid_to, now(),
       {_COLUMNS.replace("metadata", "metadata || %(note)s::jsonb")}
FROM memories
WHERE user_id = %(user_id)s AND id = %(id)s AND version_of IS NULL AND forgotten_at IS NULL
RETURNING id, created_at
"""

# The same fact, held until the new version starts: what the store knows from now on.
CLOSE = f"""
INSERT INTO memories (user_id, id, version_of, recorded_at, valid_to, forgotten_at, {_COLUMNS})
SELECT user_id, gen_random_uuid(), id, now(), %(until)s, now(), {_COLUMNS}
FROM memories
WHERE user_id = %(user_id)s AND id = %(id)s AND version_of IS NULL AND created_at < %(until)s
RETURNING id
"""

COPY_MENTIONS = """
INSERT INTO mentions (user_id, memory_id, entity_id)
SELECT user_id, %(version)s, entity_id FROM mentions WHERE user_id = %(user_id)s AND memory_id = %(id)s
"""

# The memory's relations that are still believed, with the version's clocks: as recorded and
# retired now, or held until the new version starts and recorded now. (No now() inside a CASE:
# Citus evaluates none there in a modification.)
COPY_RELATIONS_RETIRED = """
INSERT INTO relations (user_id, source_id, relation_type, target_id, memory_id, weight, valid_from,
                       valid_to, recorded_at, superseded_at, single_valued)
SELECT user_id, source_id, relation_type, target_id, %(version)s, weight, valid_from, valid_to,
       recorded_at, greatest(now(), recorded_at), single_valued
FROM relations
WHERE user_id = %(user_id)s AND memory_id = %(id)s AND superseded_at IS NULL
"""
COPY_RELATIONS_CLOSED = """
INSERT INTO relations (user_id, source_id, relation_type, target_id, memory_id, weight, valid_from,
                       valid_to, recorded_at, single_valued)
SELECT user_id, source_id, relation_type, target_id, %(version)s, weight, valid_from,
       least(coalesce(valid_to, %(until)s::timestamptz), %(until)s::timestamptz), now(), single_valued
FROM relations
WHERE user_id = %(user_id)s AND memory_id = %(id)s AND superseded_at IS NULL
  AND valid_from < %(until)s::timestamptz
"""


# The versions no longer believed, in the order they were recorded; then what is believed now, in
# the order it held.
HISTORY = """
SELECT id, version_of, content, importance, created_at, valid_to, recorded_at, superseded_at, metadata
FROM memories
WHERE user_id = %(user_id)s AND (id = %(id)s OR version_of = %(id)s)
ORDER BY superseded_at IS NULL, CASE WHEN superseded_at IS NOT NULL THEN recorded_at END, created_at, seq
"""


@dataclass(frozen=True)
class Change:
    """How a memory's new content relates to the old one: the world changed at ``valid_from``
    (now when None), or, as a ``correction``, the store had it wrong all along."""

    valid_from: datetime | None = None
    correction: bool = False
    reason: str | None = None


class MemoryVersion(BaseModel):
    """One version of a memory: what it said, when that held and when the store believed it."""

    version_id: UUID
    current: bool
    content: str
    importance: float
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    superseded_at: datetime | None
    reason: str | None = None


def keep_earlier(
    conn: Conn,
    user_id: str,
    memory_id: UUID,
    until: datetime | None,
    reason: str | None = None,
    *,
    asked: bool = False,
) -> datetime | None:
    """Keep the memory as it is now before its content is replaced, in the caller's transaction:
    retired as of now, and with ``until`` (the world changed then) also closed there. Returns
    the time the new version holds from (``until`` when it is later than the memory's own time,
    else None: the memory keeps its time), or None when there is no such live memory. When the
    caller ``asked`` for ``until`` (not the default, now), one that is not after the memory's own
    time is an error (the caller's transaction rolls back): the old content would hold for no time."""
    params: dict[str, Any] = {"user_id": user_id, "id": memory_id}
    if conn.execute(LOCK, params).fetchone() is None:
        return None  # nothing to keep; and a row committed since is not ours to copy unlocked
    note = Jsonb({"replaced_because": reason} if reason else {})
    row = conn.execute(RETIRE, {**params, "note": note}).fetchone()
    assert row is not None  # the row is locked: it is still there
    retired, held_from = row
    _copy_links(conn, params, retired, None)
    if until is None or until <= held_from:
        if asked:
            raise InvalidInputError(
                "valid_from",
                f"must be after the memory's own time ({held_from.isoformat()}): the old content held "
                "until then; to say it was never true, update it as a correction",
            )
        return None
    closed = conn.execute(CLOSE, {**params, "until": until}).fetchone()
    assert closed is not None
    _copy_links(conn, params, closed[0], until)
    return until


def _copy_links(conn: Conn, params: dict[str, Any], version: UUID, until: datetime | None) -> None:
    """The memory's mentions and believed relations for one of its versions: the retired one
    (``until`` None) or the closed one."""
    conn.execute(COPY_MENTIONS, {**params, "version": version})
    relations = COPY_RELATIONS_RETIRED if until is None else COPY_RELATIONS_CLOSED
    conn.execute(relations, {**params, "version": version, "until": until})


def history(conn: Conn, user_id: str, memory_id: UUID) -> list[MemoryVersion]:
    """Every version of a memory, the memory itself among them (``current``): those no longer
    believed in the order they were recorded, then what is believed now in the order it held."""
    rows = conn.execute(HISTORY, {"user_id": user_id, "id": memory_id}).fetchall()
    return [
        MemoryVersion(
            version_id=r[0],
            current=r[1] is None,
            content=r[2],
            importance=r[3],
            valid_from=r[4],
            valid_to=r[5],
            recorded_at=r[6],
            superseded_at=r[7],
            reason=(r[8] or {}).get("replaced_because"),
        )
        for r in rows
    ]
