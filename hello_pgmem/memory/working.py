"""Working memory: the short-lived context of one user's session, in an UNLOGGED table.

- add: rows past their TTL are deleted first, then the new row is inserted, then the lowest
  priority rows (``importance × time_decay``) are evicted until both the item capacity and the
  token budget hold; all in one transaction.
- retrieve: TF-IDF cosine (scikit-learn, fitted on the query and the live working set) and the
  reference's keyword score, combined by the SQL function ``working_score`` with time decay and
  importance; only positive scores, best first.
- forget: importance_based, time_based or capacity_based, after the TTL sweep.

Tokens are counted with :func:`hello_pgmem.text.count_tokens`, which counts Chinese characters
(a whitespace split would count a Chinese sentence as one token).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity

from hello_pgmem.db import Database
from hello_pgmem.errors import ValidationError
from hello_pgmem.memory.longterm import FORGET_STRATEGIES, ForgetStrategy
from hello_pgmem.models import MemoryConfig, MemoryItem, TypeStats, utcnow
from hello_pgmem.text import count_tokens, keyword_score, tokenize

SCOPE = "user_id = %(user_id)s AND session_id IS NOT DISTINCT FROM %(session_id)s"
DECAY = (
    "working_time_decay(greatest(0, extract(epoch FROM %(now)s::timestamptz - created_at)::float8"
    " / 3600), %(decay)s)"
)
COLUMNS = "id, content, importance, session_id, metadata, created_at"

EXPIRE = "DELETE FROM working_memories WHERE user_id = %(user_id)s AND expires_at <= %(now)s"

INSERT = """
INSERT INTO working_memories (user_id, id, session_id, content, importance, metadata,
                              token_count, created_at, expires_at)
VALUES (%(user_id)s, %(id)s, %(session_id)s, %(content)s, %(importance)s, %(metadata)s,
        %(token_count)s, %(created_at)s, %(expires_at)s)
"""

# Greedy eviction of the lowest priority until both limits hold leaves the longest prefix of
# the rows ordered by priority that fits both limits: delete everything after it.
EVICT = f"""
WITH ranked AS (
    SELECT id,
           row_number() OVER w AS n,
           sum(token_count) OVER w AS tokens
    FROM working_memories
    WHERE {SCOPE} AND expires_at > %(now)s
    WINDOW w AS (ORDER BY working_priority(importance, {DECAY}) DESC, created_at DESC, id
                 ROWS UNBOUNDED PRECEDING)
)
DELETE FROM working_memories w USING ranked r
WHERE w.user_id = %(user_id)s AND w.id = r.id
  AND (r.n > %(capacity)s OR r.tokens > %(max_tokens)s)
"""

LIVE = f"""
SELECT {COLUMNS} FROM working_memories
WHERE {SCOPE} AND expires_at > %(now)s
  AND (%(min_importance)s::double precision IS NULL OR importance >= %(min_importance)s)
  AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR created_at <= %(until)s)
ORDER BY created_at, id
"""

SCORE = f"""
SELECT w.id, w.content, w.importance, w.session_id, w.metadata, w.created_at,
       s.tfidf, s.keyword, {DECAY.replace("created_at", "w.created_at")} AS time_decay,
       importance_weight(w.importance),
       working_score(s.tfidf, s.keyword, {DECAY.replace("created_at", "w.created_at")},
                     w.importance) AS score
FROM unnest(%(ids)s::uuid[], %(tfidf)s::float8[], %(keyword)s::float8[]) AS s(id, tfidf, keyword)
JOIN working_memories w ON w.user_id = %(user_id)s AND w.id = s.id
ORDER BY score DESC, w.created_at DESC, w.id
"""

SELECT_ONE = f"""
SELECT {COLUMNS} FROM working_memories
WHERE user_id = %(user_id)s AND id = %(id)s AND expires_at > %(now)s
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

FORGET_IMPORTANCE = f"DELETE FROM working_memories WHERE {SCOPE} AND importance < %(threshold)s"
FORGET_TIME = f"DELETE FROM working_memories WHERE {SCOPE} AND created_at < %(cutoff)s"

STATS = f"""
SELECT count(*), coalesce(avg(importance), 0), coalesce(sum(token_count), 0),
       min(created_at), max(created_at)
FROM working_memories WHERE {SCOPE} AND expires_at > %(now)s
"""

CLEAR = f"DELETE FROM working_memories WHERE {SCOPE}"


def _item(user_id: str, row: Sequence[Any], scores: dict[str, float] | None = None) -> MemoryItem:
    memory_id, content, importance, session_id, metadata, created_at = row[:6]
    meta = dict(metadata or {})
    if session_id is not None:
        meta["session_id"] = session_id
    if scores:
        meta.update(scores)
    return MemoryItem.model_construct(
        id=memory_id,
        content=content,
        memory_type="working",
        user_id=user_id,
        timestamp=created_at,
        importance=float(importance),
        metadata=meta,
    )


def tfidf_scores(query: str, contents: Sequence[str]) -> list[float]:
    """Cosine similarity of TF-IDF vectors (CJK-aware tokens) between ``query`` and each text."""
    if not contents:
        return []
    vectorizer = TfidfVectorizer(analyzer=tokenize)
    try:
        matrix = vectorizer.fit_transform([query, *contents])
    except ValueError:  # no token at all (e.g. only punctuation)
        return [0.0] * len(contents)
    return [float(v) for v in cosine_similarity(matrix[0], matrix[1:])[0]]


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
        tokens = count_tokens(item.content)
        if tokens > self.config.working_memory_tokens:
            raise ValidationError(
                "content",
                f"has {tokens} tokens, more than the working-memory budget of "
                f"{self.config.working_memory_tokens}",
            )
        params = self._params(
            id=item.id,
            content=item.content,
            importance=item.importance,
            metadata=Jsonb({k: v for k, v in item.metadata.items() if k != "session_id"}),
            token_count=tokens,
            created_at=item.timestamp,
            capacity=self.config.working_memory_capacity,
            max_tokens=self.config.working_memory_tokens,
        )
        params["expires_at"] = max(item.timestamp, params["now"]) + timedelta(
            minutes=self.config.working_memory_ttl_minutes
        )
        with self.db.transaction(self.user_id) as conn:
            conn.execute(EXPIRE, params)
            conn.execute(INSERT, params)
            conn.execute(EVICT, params)
        return item.id

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
        with self.db.transaction(self.user_id) as conn:
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
            rows = conn.execute(SCORE, params).fetchall()
        results = []
        for row in rows:
            tfidf, keyword, decay, weight, score = (float(v) for v in row[6:11])
            if score > 0:
                results.append(
                    _item(
                        self.user_id,
                        row,
                        {
                            "relevance_score": score,
                            "tfidf_score": tfidf,
                            "keyword_score": keyword,
                            "time_decay": decay,
                            "importance_weight": weight,
                        },
                    )
                )
        return results[:limit]

    def get(self, memory_id: UUID) -> MemoryItem | None:
        with self.db.transaction(self.user_id) as conn:
            row = conn.execute(SELECT_ONE, self._params(id=memory_id)).fetchone()
        return None if row is None else _item(self.user_id, row)

    def update(
        self,
        memory_id: UUID,
        content: str | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> bool:
        tokens = None if content is None else count_tokens(content)
        if tokens is not None and tokens > self.config.working_memory_tokens:
            raise ValidationError("content", f"has {tokens} tokens, more than the working-memory budget")
        params = self._params(
            id=memory_id,
            content=content,
            token_count=tokens,
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
            raise ValidationError("strategy", f"must be one of {', '.join(FORGET_STRATEGIES)}")
        params = self._params(
            threshold=threshold,
            cutoff=self.clock() - timedelta(days=max_age_days),
            capacity=self.config.working_memory_capacity,
            max_tokens=self.config.working_memory_tokens,
        )
        with self.db.transaction(self.user_id) as conn:
            count = conn.execute(EXPIRE, params).rowcount
            query = {
                "importance_based": FORGET_IMPORTANCE,
                "time_based": FORGET_TIME,
                "capacity_based": EVICT,
            }[strategy]
            count += conn.execute(query, params).rowcount
        return count

    def stats(self) -> TypeStats:
        with self.db.transaction(self.user_id) as conn:
            row = conn.execute(STATS, self._params()).fetchone()
        assert row is not None
        count, avg, tokens, oldest, newest = row
        return TypeStats(
            memory_type="working",
            count=count,
            avg_importance=float(avg),
            total_tokens=int(tokens),
            oldest=oldest,
            newest=newest,
        )

    def all(self) -> list[MemoryItem]:
        params = self._params(min_importance=None, since=None, until=None)
        with self.db.transaction(self.user_id) as conn:
            rows = conn.execute(LIVE, params).fetchall()
        return [_item(self.user_id, row) for row in rows]

    def clear(self) -> int:
        with self.db.transaction(self.user_id) as conn:
            return conn.execute(CLEAR, self._params()).rowcount
