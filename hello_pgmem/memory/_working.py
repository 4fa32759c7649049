"""Working memory: the short-lived context of one user's session, in an UNLOGGED table.

- add: rows past their TTL are deleted first, then the new row is inserted, then the lowest
  priority rows (``importance × time_decay``) are evicted until both the item capacity and the
  token budget hold; all in one transaction.
- retrieve: TF-IDF cosine (fitted on the query and the live working set) and the
  reference's keyword score, combined by the SQL function ``working_score`` with time decay and
  importance; only positive scores, best first.
- forget: importance_based, time_based or capacity_based, after the TTL sweep.

Tokens are counted with :func:`hello_pgmem.core.text.count_tokens`, which counts Chinese characters
(a whitespace split would count a Chinese sentence as one token). This module owns every
statement on ``working_memories``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import (
    FORGET_STRATEGIES,
    ForgetStrategy,
    MemoryConfig,
    MemoryItem,
    TypeStats,
    utcnow,
)
from hello_pgmem.core.text import count_tokens, keyword_score, tfidf_scores
from hello_pgmem.db import Conn, Database
from hello_pgmem.memory._rows import memory_from_row, memory_rows

COLUMNS = "id, content, importance, session_id, metadata, created_at"
NAMES = COLUMNS.split(", ")

EXPIRE = "DELETE FROM working_memories WHERE user_id = %(user_id)s AND expires_at <= %(now)s"
EXPIRE_ALL = "DELETE FROM working_memories WHERE expires_at <= %(now)s"

INSERT = """
INSERT INTO working_memories (user_id, id, session_id, content, importance, metadata,
                              token_count, created_at, expires_at)
VALUES (%(user_id)s, %(id)s, %(session_id)s, %(content)s, %(importance)s, %(metadata)s,
        %(token_count)s, %(created_at)s, %(expires_at)s)
"""

# Greedy eviction of the lowest priority until both limits hold leaves the longest prefix of
# the rows ordered by priority that fits both limits: delete everything after it.
EVICT = """
WITH ranked AS (
    SELECT w.id,
           row_number() OVER win AS n,
           sum(w.token_count) OVER win AS tokens
    FROM working_memories w
    CROSS JOIN LATERAL (SELECT working_time_decay(
        greatest(0, extract(epoch FROM %(now)s::timestamptz - w.created_at)::float8 / 3600),
        %(decay)s) AS time_decay) d
    WHERE w.user_id = %(user_id)s AND w.session_id IS NOT DISTINCT FROM %(session_id)s
      AND w.expires_at > %(now)s
    WINDOW win AS (ORDER BY working_priority(w.importance, d.time_decay) DESC, w.created_at DESC, w.id
                   ROWS UNBOUNDED PRECEDING)
)
DELETE FROM working_memories w USING ranked r
WHERE w.user_id = %(user_id)s AND w.id = r.id
  AND (r.n > %(capacity)s OR r.tokens > %(max_tokens)s)
"""

LIVE = f"""
SELECT {COLUMNS} FROM working_memories
WHERE user_id = %(user_id)s AND session_id IS NOT DISTINCT FROM %(session_id)s
  AND expires_at > %(now)s
  AND (%(min_importance)s::double precision IS NULL OR importance >= %(min_importance)s)
  AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR created_at <= %(until)s)
ORDER BY created_at, id
"""

SCORE = """
SELECT w.id, w.content, w.importance, w.session_id, w.metadata, w.created_at,
       s.tfidf AS tfidf_score, s.keyword AS keyword_score, d.time_decay,
       importance_weight(w.importance) AS importance_weight,
       working_score(s.tfidf, s.keyword, d.time_decay, w.importance) AS score
FROM unnest(%(ids)s::uuid[], %(tfidf)s::float8[], %(keyword)s::float8[]) AS s(id, tfidf, keyword)
JOIN working_memories w ON w.user_id = %(user_id)s AND w.id = s.id
CROSS JOIN LATERAL (SELECT working_time_decay(
    greatest(0, extract(epoch FROM %(now)s::timestamptz - w.created_at)::float8 / 3600),
    %(decay)s) AS time_decay) d
ORDER BY score DESC, w.created_at DESC, w.id
"""

SELECT_ONE = f"""
SELECT {COLUMNS} FROM working_memories
WHERE user_id = %(user_id)s AND id = %(id)s AND expires_at > %(now)s
"""

IDS_WITH_PREFIX = """
SELECT id FROM working_memories
WHERE user_id = %(user_id)s AND expires_at > %(now)s AND starts_with(id::text, %(prefix)s)
LIMIT 2
"""

MOST_IMPORTANT = f"""
SELECT {COLUMNS} FROM working_memories
WHERE user_id = %(user_id)s AND session_id IS NOT DISTINCT FROM %(session_id)s
  AND expires_at > %(now)s AND importance >= %(min_importance)s
ORDER BY importance DESC, created_at DESC, id
LIMIT %(limit)s
"""

UPDATE = """
UPDATE working_memories
SET content = coalesce(%(content)s::text, content),
    token_count = coalesce(%(token_count)s::integer, token_count),
    importance = coalesce(%(importance)s::double precision, importance),
    metadata = metadata || %(metadata)s::jsonb
WHERE user_id = %(user_id)s AND id = %(id)s AND expires_at > %(now)s
"""

DELETE = "DELETE FROM working_memories WHERE user_id = %(user_id)s AND id = %(id)s"

FORGET_IMPORTANCE = """
DELETE FROM working_memories
WHERE user_id = %(user_id)s AND session_id IS NOT DISTINCT FROM %(session_id)s
  AND importance < %(threshold)s
"""

FORGET_TIME = """
DELETE FROM working_memories
WHERE user_id = %(user_id)s AND session_id IS NOT DISTINCT FROM %(session_id)s
  AND created_at < %(cutoff)s
"""

# Every session's live items: what the user holds (erase removes them all too), and how many of
# them the current session has.
STATS = """
SELECT count(*), coalesce(avg(importance), 0), coalesce(sum(token_count), 0),
       min(created_at), max(created_at), count(DISTINCT session_id),
       count(*) FILTER (WHERE session_id IS NOT DISTINCT FROM %(session_id)s)
FROM working_memories
WHERE user_id = %(user_id)s AND expires_at > %(now)s
"""

CLEAR = """
DELETE FROM working_memories
WHERE user_id = %(user_id)s AND session_id IS NOT DISTINCT FROM %(session_id)s
"""

CLEAR_USER = "DELETE FROM working_memories WHERE user_id = %(user_id)s"

# Consolidation takes the rows it moves out in one statement, re-checked under the row locks:
# a row whose content changed since it was read stays for the next run.
TAKE_FOR_CONSOLIDATION = """
DELETE FROM working_memories w
USING unnest(%(ids)s::uuid[], %(contents)s::text[]) AS src(id, content)
WHERE w.user_id = %(user_id)s AND w.id = src.id AND w.content = src.content
  AND w.importance >= %(threshold)s AND w.expires_at > %(now)s
RETURNING w.id, w.content, w.importance, w.session_id, w.metadata, w.created_at
"""

CONSOLIDATION_CANDIDATES = """
SELECT id, content FROM working_memories
WHERE user_id = %(user_id)s AND session_id IS NOT DISTINCT FROM %(session_id)s
  AND expires_at > %(now)s AND importance >= %(threshold)s
ORDER BY created_at, id
"""


class WorkingMemory:
    """The working memory of one user in one session (or of no session when None)."""

    def __init__(
        self,
        db: Database,
        user_id: str,
        config: MemoryConfig | None = None,
        *,
        session_id: str | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.db = db
        self.user_id = user_id
        self.config = config or MemoryConfig()
        self.session_id = session_id
        self.clock = clock

    def _params(self, **extra: Any) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "session_id": self.session_id,
            "now": self.clock(),
            "decay": self.config.decay_factor,
            **extra,
        }

    def add(self, item: MemoryItem) -> UUID:
        """Store ``item``; evict the lowest-priority items beyond the capacity or token budget."""
        tokens = self._tokens(item.content)
        params = self._params(
            id=item.id,
            session_id=item.session_id,
            content=item.content,
            importance=item.importance,
            metadata=Jsonb(item.metadata),
            token_count=tokens,
            created_at=item.timestamp,
            capacity=self.config.working_memory_capacity,
            max_tokens=self.config.working_memory_tokens,
        )
        params["expires_at"] = max(item.timestamp, params["now"]) + timedelta(
            minutes=self.config.working_memory_ttl_minutes
        )
        with self.db.transaction(self.user_id, pipeline=True) as conn:  # one round trip
            conn.execute(EXPIRE, params)
            conn.execute(INSERT, params)
            conn.execute(EVICT, params)
        return item.id

    def _tokens(self, content: str) -> int:
        tokens = count_tokens(content)
        if tokens > self.config.working_memory_tokens:
            raise InvalidInputError(
                "content",
                f"has {tokens} tokens, more than the working-memory budget of "
                f"{self.config.working_memory_tokens}",
            )
        return tokens

    def retrieve(
        self,
        query: str,
        limit: int = 5,
        *,
        min_importance: float | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[MemoryItem]:
        """The live items most relevant to ``query``; each carries its score components."""
        params = self._params(min_importance=min_importance, since=since, until=until)
        # Two round trips: the scope, expiry and live items; then the scores with the COMMIT.
        # A read-only store (the web view) leaves expired items to the next writer.
        with self.db.transaction(self.user_id, pipeline=True) as conn:
            if not self.db.settings.read_only:
                conn.execute(EXPIRE, params)
            live = conn.execute(LIVE, params).fetchall()
            if not live:
                return []
            contents = [row[1] for row in live]
            params.update(
                ids=[row[0] for row in live],
                tfidf=[min(1.0, max(0.0, s)) for s in tfidf_scores(query, contents)],
                keyword=[keyword_score(query, content) for content in contents],
            )
            scores = conn.cursor(row_factory=memory_rows(self.user_id)).execute(SCORE, params)
        scored = scores.fetchall()  # received with the COMMIT's answer
        return [item for item in scored if (item.score or 0) > 0][:limit]

    def get(self, memory_id: UUID) -> MemoryItem | None:
        with self.db.transaction(self.user_id) as conn:
            return self.get_in(conn, memory_id)

    def get_in(self, conn: Conn, memory_id: UUID) -> MemoryItem | None:
        """The live item ``memory_id`` of any session, read in the caller's transaction."""
        row = conn.execute(SELECT_ONE, self._params(id=memory_id)).fetchone()
        return None if row is None else memory_from_row(self.user_id, NAMES, row)

    def most_important(self, conn: Conn, limit: int, min_importance: float) -> list[MemoryItem]:
        """The session's live items, most important first (for summaries)."""
        params = self._params(limit=limit, min_importance=min_importance)
        rows = conn.execute(MOST_IMPORTANT, params).fetchall()
        return [memory_from_row(self.user_id, NAMES, row) for row in rows]

    def ids_with_prefix(self, conn: Conn, prefix: str) -> list[UUID]:
        """Ids of live items (any session) that start with ``prefix``; at most two."""
        return [row[0] for row in conn.execute(IDS_WITH_PREFIX, self._params(prefix=prefix)).fetchall()]

    def update(
        self,
        memory_id: UUID,
        content: str | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> bool:
        params = self._params(
            id=memory_id,
            content=content,
            token_count=None if content is None else self._tokens(content),
            importance=importance,
            metadata=Jsonb(metadata or {}),
        )
        with self.db.transaction(self.user_id) as conn:
            return conn.execute(UPDATE, params).rowcount == 1

    def remove(self, memory_id: UUID) -> bool:
        with self.db.transaction(self.user_id) as conn:
            return conn.execute(DELETE, self._params(id=memory_id)).rowcount == 1

    def forget(self, strategy: ForgetStrategy, threshold: float = 0.1, max_age_days: float = 1) -> int:
        """Delete by importance, age or capacity, after expiring rows past their TTL."""
        if strategy not in FORGET_STRATEGIES:
            raise InvalidInputError("strategy", f"must be one of {', '.join(FORGET_STRATEGIES)}")
        params = self._params(
            threshold=threshold,
            cutoff=self.clock() - timedelta(days=max_age_days),
            capacity=self.config.working_memory_capacity,
            max_tokens=self.config.working_memory_tokens,
        )
        query = {"importance_based": FORGET_IMPORTANCE, "time_based": FORGET_TIME, "capacity_based": EVICT}
        with self.db.transaction(self.user_id) as conn:
            return conn.execute(EXPIRE, params).rowcount + conn.execute(query[strategy], params).rowcount

    def stats(self) -> TypeStats:
        """The user's live items in every session; ``in_session`` counts this session's."""
        with self.db.transaction(self.user_id) as conn:
            row = conn.execute(STATS, self._params()).fetchone()
        assert row is not None
        count, avg, tokens, oldest, newest, sessions, in_session = row
        return TypeStats(
            memory_type="working",
            count=count,
            avg_importance=float(avg),
            total_tokens=int(tokens),
            sessions_count=sessions,
            in_session=in_session,
            oldest=oldest,
            newest=newest,
        )

    def all(self) -> list[MemoryItem]:
        params = self._params(min_importance=None, since=None, until=None)
        with self.db.transaction(self.user_id) as conn:
            rows = conn.execute(LIVE, params).fetchall()
        return [memory_from_row(self.user_id, NAMES, row) for row in rows]

    def clear(self) -> int:
        with self.db.transaction(self.user_id) as conn:
            return conn.execute(CLEAR, self._params()).rowcount

    def clear_user(self, conn: Conn) -> int:
        """Delete the user's working memory of every session (in the caller's transaction)."""
        return conn.execute(CLEAR_USER, {"user_id": self.user_id}).rowcount

    def consolidation_candidates(self, threshold: float) -> list[tuple[UUID, str]]:
        """(id, content) of the session's live items at or above ``threshold``, oldest first."""
        with self.db.transaction(self.user_id) as conn:
            rows = conn.execute(CONSOLIDATION_CANDIDATES, self._params(threshold=threshold)).fetchall()
        return [(row[0], row[1]) for row in rows]

    def take(self, conn: Conn, candidates: Sequence[tuple[UUID, str]], threshold: float) -> list[Any]:
        """Delete the candidates still unchanged and above ``threshold``; return their rows."""
        params = self._params(
            ids=[c[0] for c in candidates], contents=[c[1] for c in candidates], threshold=threshold
        )
        return list(conn.execute(TAKE_FOR_CONSOLIDATION, params).fetchall())


def expire_all(conn: Conn, now: datetime) -> int:
    """Delete every user's working memory past its TTL (maintenance; needs all rows)."""
    return conn.execute(EXPIRE_ALL, {"now": now}).rowcount
