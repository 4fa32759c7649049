"""Key-value items in the memories table: the LangGraph store's view of a user's memory.

An item is an episodic memory whose metadata holds ``{"langgraph": {"namespace": [...], "key":
..., "value": {...}}}`` and whose session_id is the namespace path (``lg.`` and the labels joined
by ``.``; LangGraph labels hold no period). Each call runs in a transaction of its own, scoped to
the user.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from hello_pgmem.core.filters import MemoryFilter
from hello_pgmem.core.retry import retry_transient
from hello_pgmem.db import Conn
from hello_pgmem.memory import _versions as versions
from hello_pgmem.memory._optional_stages import waiting_rows
from hello_pgmem.memory._parts import MemoryParts
from hello_pgmem.memory._search_sql import fusion_params

Row = tuple[UUID, dict[str, Any], datetime, datetime]
"""An item: its id, its ``langgraph`` metadata, when it was created and last updated."""

# An item past its expiry (expires_at, from its ttl) is left out of reads that omit the expired.
_LIVE = "(%(omit_expired)s IS FALSE OR {m}expires_at IS NULL OR {m}expires_at > now())"

# The items of a namespace that match a filter: the search's own predicate, on its filter (_filter).
_KEPT = "_passes_filters(memory_type, session_id, created_at, importance, modality, metadata, %(filter)s)"


STORE_ITEMS = f"""
SELECT id, metadata -> 'langgraph', created_at, updated_at
FROM memories
WHERE user_id = %(user_id)s AND forgotten_at IS NULL AND metadata ? 'langgraph' AND {_KEPT}
  AND {_LIVE.format(m="")}
ORDER BY updated_at DESC, id
LIMIT %(limit)s OFFSET %(offset)s
"""

STORE_GET = f"""
SELECT id, metadata -> 'langgraph', created_at, updated_at
FROM memories
WHERE user_id = %(user_id)s AND id = ANY(%(ids)s) AND forgotten_at IS NULL AND metadata ? 'langgraph'
  AND {_LIVE.format(m="")}
"""

STORE_SEARCH = f"""
SELECT s.id, s.metadata -> 'langgraph', s.created_at, m.updated_at, s.score
FROM search_memories(p_user_id => %(user_id)s, p_model => %(model)s, p_query => %(query)s,
                     p_query_text => %(query_text)s, p_limit => %(window)s, p_filter => %(filter)s,
                     p_fusion => %(fusion)s, p_vector_weight => %(vector_weight)s) AS s
JOIN memories m ON m.user_id = %(user_id)s AND m.id = s.id
WHERE {_LIVE.format(m="m.")}
ORDER BY s.score DESC, s.id
OFFSET %(offset)s
"""
"""The store's query search: the namespace and the filter inside the candidate search (an expired
item left out after it, when asked: the sweep forgets expired items soon anyway)."""

STORE_PUT = """
INSERT INTO memories AS m (user_id, id, memory_type, content, importance, session_id, metadata,
                           created_at, updated_at, embedding, embedding_model, expires_at)
VALUES (%(user_id)s, %(id)s, 'episodic', %(content)s, %(importance)s, %(session_id)s, %(metadata)s,
        %(now)s, %(now)s, %(embedding)s, %(model)s, now() + make_interval(secs => %(ttl_s)s))
ON CONFLICT (user_id, id) DO UPDATE
SET content = EXCLUDED.content,
    expires_at = EXCLUDED.expires_at,
    session_id = EXCLUDED.session_id,
    -- a new text without its vector yet keeps none: sql/embedding_queue.sql queues it
    embedding = coalesce(EXCLUDED.embedding, m.embedding),
    embedding_model = coalesce(EXCLUDED.embedding_model, m.embedding_model),
    updated_at = EXCLUDED.updated_at,
    recorded_at = now(),
    -- a live item keeps its history; a forgotten one comes back as new
    metadata = CASE WHEN m.forgotten_at IS NULL THEN m.metadata || EXCLUDED.metadata
                    ELSE EXCLUDED.metadata END,
    importance = CASE WHEN m.forgotten_at IS NULL THEN m.importance ELSE EXCLUDED.importance END,
    created_at = CASE WHEN m.forgotten_at IS NULL THEN m.created_at ELSE EXCLUDED.created_at END,
    access_count = CASE WHEN m.forgotten_at IS NULL THEN m.access_count ELSE 0 END,
    last_accessed_at = CASE WHEN m.forgotten_at IS NULL THEN m.last_accessed_at END,
    forgotten_at = NULL
WHERE m.memory_type = 'episodic' AND m.metadata ? 'langgraph'
RETURNING id
"""
"""A LangGraph put as one statement: concurrent puts of a key, and a put of a forgotten item, each
end in one whole item (the last writer's)."""

# An item as the store knew it at %(known_at)s: the item itself or one of its earlier values.
_AS_OF = """memory_as_of(created_at, valid_to, recorded_at, superseded_at, forgotten_at, version_of,
                      now(), %(known_at)s)"""

STORE_GET_AS_OF = f"""
SELECT coalesce(version_of, id), metadata -> 'langgraph', created_at, updated_at
FROM memories
WHERE user_id = %(user_id)s AND (id = ANY(%(ids)s) OR version_of = ANY(%(ids)s)) AND metadata ? 'langgraph'
  AND {_AS_OF}
"""

STORE_ITEMS_AS_OF = f"""
SELECT coalesce(version_of, id), metadata -> 'langgraph', created_at, updated_at
FROM memories
WHERE user_id = %(user_id)s AND metadata ? 'langgraph' AND {_KEPT}
  AND {_AS_OF}
ORDER BY updated_at DESC, 1
LIMIT %(limit)s OFFSET %(offset)s
"""

STORE_SEARCH_AS_OF = """
SELECT coalesce(m.version_of, m.id), m.metadata -> 'langgraph', m.created_at, m.updated_at, s.score
FROM search_memories_as_of(p_user_id => %(user_id)s, p_model => %(model)s, p_query => %(query)s,
                           p_query_text => %(query_text)s, p_limit => %(window)s + %(offset)s,
                           p_filter => %(filter)s, p_valid_at => now(), p_known_at => %(known_at)s) AS s
JOIN memories m ON m.user_id = %(user_id)s AND m.id = s.id
WHERE m.metadata ? 'langgraph'
ORDER BY s.score DESC, 1
LIMIT %(window)s OFFSET %(offset)s
"""
"""The as-of search: the namespace and filter inside its ranking, as in the live one."""

DELETE_ITEM = "DELETE FROM memories WHERE user_id = %(user_id)s AND id = %(id)s AND version_of IS NULL"

STORE_NAMESPACES = f"""
SELECT DISTINCT metadata -> 'langgraph' -> 'namespace'
FROM memories
WHERE user_id = %(user_id)s AND forgotten_at IS NULL AND memory_type = 'episodic' AND metadata ? 'langgraph'
  AND {_LIVE.format(m="")}
"""

# A read that refreshes moves a live item's expiry to its ttl from now (an expired one stays so).
# In the read's transaction, the rows are locked in id order and those another transaction holds
# at that instant are passed over (the read never waits there holding others); each of those is
# refreshed after the read, in a transaction of its own (``REFRESH_ONE``), which holds nothing else.
_REFRESHED = "expires_at = now() + make_interval(secs => (metadata -> 'langgraph' ->> 'ttl')::float8 * 60)"
_REFRESHABLE = "user_id = %(user_id)s AND expires_at > now() AND metadata -> 'langgraph' ? 'ttl'"
REFRESH = f"""
UPDATE memories m SET {_REFRESHED}
FROM (SELECT id FROM memories WHERE {_REFRESHABLE} AND id = ANY(%(ids)s)
      ORDER BY id
      FOR NO KEY UPDATE SKIP LOCKED) AS held
WHERE m.user_id = %(user_id)s AND m.id = held.id
RETURNING m.id
"""
REFRESH_ONE = f"UPDATE memories SET {_REFRESHED} WHERE {_REFRESHABLE} AND id = %(id)s"

# The sweep: expired items are forgotten (maintain purges them after its retention, as it does
# every forgotten memory); a put of the key brings it back as new.
SWEEP = """
UPDATE memories SET forgotten_at = now()
WHERE (%(user_id)s::text IS NULL OR user_id = %(user_id)s) AND expires_at <= now()
  AND forgotten_at IS NULL AND version_of IS NULL AND metadata ? 'langgraph'
"""


@dataclass(frozen=True)
class Expiry:
    """How a read treats expiring items: ``omit`` leaves out those past their expiry, ``refresh``
    moves the expiry of those it returns to their ttl from now."""

    omit: bool = False
    refresh: bool = False

    def params(self) -> dict[str, Any]:
        return {"omit_expired": self.omit}

    def moved(self, conn: Conn, user_id: str, rows: Sequence[Sequence[Any]]) -> list[UUID]:
        """Move the expiry of ``rows`` (items, their id first) when this read refreshes; the ids
        of those it passed over (held by another transaction, or expired)."""
        if not (self.refresh and rows):
            return []
        done = {row[0] for row in conn.execute(REFRESH, {"user_id": user_id, "ids": [r[0] for r in rows]})}
        return [row[0] for row in rows if row[0] not in done]


NO_EXPIRY = Expiry()


def sweep_expired(conn: Conn) -> int:
    """Forget every user's expired items (needs all rows); how many."""
    return conn.execute(SWEEP, {"user_id": None}).rowcount


class ItemStore:
    """The items of one user's memory, each call one transaction scoped to that user."""

    def __init__(self, parts: MemoryParts) -> None:
        self.parts = parts
        self.db = parts.db
        self.user_id = parts.user_id

    @retry_transient
    def put(
        self,
        memory_id: UUID,
        content: str,
        importance: float,
        path: str,
        metadata: dict[str, Any],
        ttl_minutes: float | None = None,
    ) -> bool:
        """Write an item whole (one statement; its vector made first, or queued), expiring
        ``ttl_minutes`` from now (never: None); False when the id names a memory that is no item."""
        embedder = self.parts.registered_embedder
        vector = embedder.encode_documents([content])[0] if self.parts.embeds_now else None
        params = {
            "user_id": self.user_id,
            "id": memory_id,
            "content": content,
            "importance": importance,
            "session_id": path,
            "metadata": Jsonb(metadata),
            "now": self.parts.clock(),
            "embedding": vector,
            "model": None if vector is None else embedder.model_name,
            "ttl_s": None if ttl_minutes is None else ttl_minutes * 60,
        }
        with self.db.transaction(self.user_id, embedding_model=embedder.model_name) as conn:
            versions.keep_earlier(conn, self.user_id, memory_id, None, "put")  # its value until now
            written = conn.execute(STORE_PUT, params).fetchone() is not None
        if not self.parts.embeds_now:
            self.parts.queued()
        return written

    @retry_transient
    def delete(self, memory_id: UUID) -> None:
        """Delete an item (nothing when there is none); its value until now stays an earlier version."""
        with self._transaction() as conn:
            versions.keep_earlier(conn, self.user_id, memory_id, None, "delete")
            conn.execute(DELETE_ITEM, {"user_id": self.user_id, "id": memory_id})

    def get(
        self, memory_ids: Sequence[UUID], known_at: datetime | None = None, ttl: Expiry = NO_EXPIRY
    ) -> list[Row]:
        """The items among ``memory_ids``: live, or as the store knew them at ``known_at``."""
        params = {"user_id": self.user_id, "ids": list(memory_ids), "known_at": known_at, **ttl.params()}
        return self._read(STORE_GET if known_at is None else STORE_GET_AS_OF, params, ttl)

    def listed(
        self,
        prefix: str,
        where: str | None,
        variables: dict[str, Any],
        limit: int,
        offset: int,
        known_at: datetime | None = None,
        ttl: Expiry = NO_EXPIRY,
    ) -> list[Row]:
        """Items under the namespace path ``prefix`` matching the jsonpath ``where``, newest first:
        live, or as the store knew them at ``known_at``."""
        params = {**self._filter(prefix, where, variables), "limit": limit, "offset": offset, **ttl.params()}
        if known_at is not None:
            return self._read(STORE_ITEMS_AS_OF, {**params, "known_at": known_at})
        return self._read(STORE_ITEMS, params, ttl)

    def search(
        self,
        prefix: str,
        where: str | None,
        variables: dict[str, Any],
        query: str,
        window: int,
        offset: int,
        known_at: datetime | None = None,
        ttl: Expiry = NO_EXPIRY,
    ) -> list[tuple[UUID, dict[str, Any], datetime, datetime, float]]:
        """Items ranked for ``query`` by the hybrid search, the namespace and filter inside it; with
        ``known_at``, the items as the store knew them then, by the as-of search. The user's few
        queued items are embedded first, as ``retrieve_memories`` does (what was just put is found
        by meaning)."""
        embedder = self.parts.registered_embedder
        waiting_rows(self.parts)  # a catch-up that fails leaves the search to rank by words
        params = {
            **self._filter(prefix, where, variables),
            "model": embedder.model_name,
            "query": embedder.encode_query(query),
            "query_text": query,
            "window": window,
            "offset": offset,
            "known_at": known_at,
            **fusion_params(self.parts, query),
            **ttl.params(),
        }
        return self._read(STORE_SEARCH if known_at is None else STORE_SEARCH_AS_OF, params, ttl)

    def namespaces(self, ttl: Expiry = NO_EXPIRY) -> list[list[str]]:
        """The namespace of every live item (repeats removed)."""
        params = {"user_id": self.user_id, **ttl.params()}
        with self._transaction() as conn:
            return [row[0] for row in conn.execute(STORE_NAMESPACES, params).fetchall()]

    @retry_transient
    def sweep(self) -> int:
        """Forget this user's expired items; how many."""
        with self._transaction() as conn:
            return conn.execute(SWEEP, {"user_id": self.user_id}).rowcount

    def _read(self, statement: str, params: dict[str, Any], ttl: Expiry = NO_EXPIRY) -> list[Any]:
        """The rows of one read, refreshed as ``ttl`` says: in the read's transaction, then each
        row it passed over in one of its own."""
        with self._transaction() as conn:
            rows = conn.execute(statement, params).fetchall()
            passed_over = ttl.moved(conn, self.user_id, rows)
        for memory_id in passed_over:
            with self._transaction() as conn:
                conn.execute(REFRESH_ONE, {"user_id": self.user_id, "id": memory_id})
        return rows

    def _transaction(self) -> AbstractContextManager[Conn]:
        return self.parts.db.transaction(self.user_id)

    def _filter(self, prefix: str, where: str | None, variables: dict[str, Any]) -> dict[str, Any]:
        """The user and the filter of the items under the namespace path ``prefix`` that match the
        jsonpath ``where`` with ``variables``."""
        kept = MemoryFilter(
            memory_types=["episodic"], session_prefix=prefix, where_path=where, where_vars=variables
        )
        return {"user_id": self.user_id, "filter": kept}
