"""Every statement on the embedding queues (``memory_embedding_queue``, ``chunk_embedding_queue``):
the queue family's owner. Claims, stores and failures run in a transaction scoped to one user (a
memory's) or one namespace (a chunk's), under row-level security; ``embedding_backlog`` and
``embedding_queue_status`` (sql/embedding_queue.sql) are the two reads across every scope."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["memory", "chunk"]


@dataclass(frozen=True)
class QueueStatements:
    """The statements of one queue: its table's rows claimed with their texts, vectors stored for
    the generation they were made from, failures kept, claims given back, rows counted."""

    claim: str
    claim_fresh: str
    texts: str
    lock_rows: str
    store: str
    fail: str
    release: str
    pending: str
    fresh_left: str
    await_row: str


# Claims: the scope's oldest due rows of the model (or of any model), not claimed by a live lease,
# the longest waiting first, as many as fit in ``limit`` rows and ``chars`` characters of text (and
# the first one whatever its length, ``at_least_one``: a worker claims what one part of its model's
# batch holds, and leases no more than it embeds next); a lease until the claim's end. A catch-up's
# claim (``claim_fresh``) takes the rows that never failed whether or not a worker holds a lease on
# them: a search right after a write then embeds what the write queued even while a worker does
# too (the first vector written wins; the other finds its row gone). No claim waits for a row
# another transaction has locked (SKIP LOCKED): a claim locks queue rows alone, so waiting there
# would take locks out of the one order every other writer keeps (the memory or chunk, then its
# queue row), and a row locked at that instant is being claimed or stored by someone else.
_CLAIM = """
WITH due AS (
    SELECT c.{key}, c.queued_at, length(t.content) AS chars
    FROM {queue} c JOIN {table} t ON t.{scope} = c.{scope} AND t.id = c.{key}
    WHERE c.{scope} = %(scope)s AND (c.model = %(model)s OR c.model IS NULL) AND {due}
    ORDER BY c.queued_at, c.{key}
    LIMIT %(limit)s
), fitting AS (
    SELECT w.{key} FROM (
        SELECT d.{key}, row_number() OVER running AS n, sum(d.chars) OVER running AS total
        FROM due d
        WINDOW running AS (ORDER BY d.queued_at, d.{key})) AS w
    WHERE (w.n = 1 AND %(at_least_one)s) OR w.total <= %(chars)s
), picked AS MATERIALIZED (
    SELECT c.{key} FROM {queue} c
    WHERE c.{scope} = %(scope)s AND c.{key} IN (SELECT f.{key} FROM fitting f)
      AND (c.model = %(model)s OR c.model IS NULL) AND {due}
    ORDER BY c.queued_at, c.{key}
    FOR UPDATE{skip}
)
UPDATE {queue} AS q
SET claimed_until = now() + make_interval(secs => %(lease_s)s)
FROM picked
WHERE q.{scope} = %(scope)s AND q.{key} = picked.{key}
RETURNING q.{key}, q.generation, q.attempts
"""
# (The rows are picked once, before the update: a picking subquery that a nested loop scans again
# skips the rows this statement already updated and picks the next ones, past the limit.)

# The claimed rows' texts (and their fingerprints), read by the claim's transaction in a statement
# after the claim: a queue row locked by the claim after a writer's commit comes at that writer's
# generation, and the claim's own statement would still read the text of its older snapshot. The
# next statement sees every text up to the generation claimed; no later text can commit while the
# claim holds its queue rows (the writer's requeue waits for them).
_TEXTS = """
SELECT t.id, {text}, {fingerprint} FROM {table} t
WHERE t.{scope} = %(scope)s AND t.id = ANY (%(ids)s::uuid[])
"""

# A vector is written only while its row still waits at the generation it was made from: a row
# whose text changed meanwhile keeps waiting, for the vector of its new text. The rows are locked
# first (``LOCK_ROWS``, the memory or chunk before its queue row, as every writer does), so that a
# store never waits for a writer that waits for it.
_LOCK_ROWS = """
SELECT t.id FROM {table} t
WHERE t.{scope} = %(scope)s AND t.id = ANY (%(ids)s::uuid[])
ORDER BY t.id
FOR NO KEY UPDATE
"""
_STORE = """
WITH done AS (
    DELETE FROM {queue} q
    USING unnest(%(ids)s::uuid[], %(generations)s::bigint[]) AS d(id, generation)
    WHERE q.{scope} = %(scope)s AND q.{key} = d.id AND q.generation = d.generation
    RETURNING q.{key} AS id
)
UPDATE {table} t SET embedding = v.embedding, embedding_model = %(model)s, embedded_hash = v.fingerprint
FROM done
JOIN unnest(%(ids)s::uuid[], %(embeddings)b::vector[], %(fingerprints)s::bytea[])
     AS v(id, embedding, fingerprint) ON v.id = done.id
WHERE t.{scope} = %(scope)s AND t.id = done.id
RETURNING t.id
"""

_FAIL = """
UPDATE {queue} q
SET attempts = q.attempts + 1, claimed_until = NULL, last_error = %(error)s,
    retry_at = now() + make_interval(secs => least(%(cap_s)s, %(base_s)s * power(2, q.attempts)))
FROM unnest(%(ids)s::uuid[], %(generations)s::bigint[]) AS d(id, generation)
WHERE q.{scope} = %(scope)s AND q.{key} = d.id AND q.generation = d.generation
"""

_RELEASE = """
UPDATE {queue} q SET claimed_until = NULL
FROM unnest(%(ids)s::uuid[], %(generations)s::bigint[]) AS d(id, generation)
WHERE q.{scope} = %(scope)s AND q.{key} = d.id AND q.generation = d.generation
"""

# How many of the scope's rows wait for a vector of the model, and how many of them never failed
# (what a search may embed itself), counted up to a cap; and whether a search embeds them itself
# before it ranks (a catch-up: some never tried, at most ``most`` in all; NULL: never), also left in
# the transaction's pgmem.catch_up_due for the search statement that follows (it logs no access
# then: it runs again after the catch-up).
_PENDING = """
SELECT p.rows, p.fresh,
       set_config('pgmem.catch_up_due',
                  coalesce(p.fresh > 0 AND p.rows <= %(most)s::integer, false)::text, true)::boolean
FROM (SELECT count(*) AS rows, count(*) FILTER (WHERE w.attempts = 0) AS fresh
      FROM (SELECT c.attempts FROM {queue} c
            WHERE c.{scope} = %(scope)s AND (c.model = %(model)s OR c.model IS NULL)
            LIMIT 100000) AS w) AS p
"""

# A catch-up's fresh rows still queued after its claim: rows another transaction held at that
# instant (a worker claiming or storing them), or queued since.
_FRESH_LEFT = """
SELECT c.{key} FROM {queue} c
WHERE c.{scope} = %(scope)s AND (c.model = %(model)s OR c.model IS NULL) AND c.attempts = 0
ORDER BY c.queued_at, c.{key}
LIMIT %(limit)s
"""
# Waits until no other transaction holds one queue row (the lock goes with the waiter's commit):
# one row at a time, so the waiter never holds a row while it waits for another.
_AWAIT_ROW = """
SELECT 1 FROM {queue} c WHERE c.{scope} = %(scope)s AND c.{key} = %(id)s FOR NO KEY UPDATE
"""


def _statements(queue: str, table: str, scope: str, key: str, text: str, fingerprint: str) -> QueueStatements:
    names = {
        "queue": queue,
        "table": table,
        "scope": scope,
        "key": key,
        "text": text,
        "fingerprint": fingerprint,
    }
    due = "c.retry_at <= now() AND (c.claimed_until IS NULL OR c.claimed_until < now())"
    return QueueStatements(
        claim=_CLAIM.format(**names, due=due, skip=" SKIP LOCKED"),
        claim_fresh=_CLAIM.format(**names, due="c.attempts = 0", skip=" SKIP LOCKED"),
        texts=_TEXTS.format(**names),
        lock_rows=_LOCK_ROWS.format(**names),
        store=_STORE.format(**names),
        fail=_FAIL.format(**names),
        release=_RELEASE.format(**names),
        pending=_PENDING.format(**names),
        fresh_left=_FRESH_LEFT.format(**names),
        await_row=_AWAIT_ROW.format(**names),
    )


STATEMENTS: dict[Kind, QueueStatements] = {
    "memory": _statements(
        "memory_embedding_queue",
        "memories",
        "user_id",
        "memory_id",
        "t.content, NULL::text[]",
        "vector_fingerprint(t.content)",
    ),
    "chunk": _statements(
        "chunk_embedding_queue",
        "chunks",
        "namespace",
        "chunk_id",
        "t.content, t.heading_path",
        "vector_fingerprint(t.content, t.heading_path)",
    ),
}

BACKLOG = "SELECT kind, scope, due FROM embedding_backlog(%(model)s, %(limit)s)"
RETRY_NOW = "SELECT embedding_queue_retry(%(model)s, %(error)s)"
STATUS = """
SELECT kind, model, pending, claimed, failing, oldest, next_retry FROM embedding_queue_status()
"""
SCOPE_ERRORS = {
    "memory": """
SELECT q.memory_id, q.attempts, q.retry_at, q.last_error FROM memory_embedding_queue q
WHERE q.user_id = %(scope)s AND q.attempts > 0 ORDER BY q.retry_at LIMIT %(limit)s
""",
    "chunk": """
SELECT q.chunk_id, q.attempts, q.retry_at, q.last_error FROM chunk_embedding_queue q
WHERE q.namespace = %(scope)s AND q.attempts > 0 ORDER BY q.retry_at LIMIT %(limit)s
""",
}
# One scope's queue, as its own user reads it (the web view): counts, the oldest, the next retry,
# the last error.
SCOPE_QUEUE = {
    kind: f"""
SELECT count(*), count(*) FILTER (WHERE q.attempts > 0), min(q.queued_at),
       min(q.retry_at) FILTER (WHERE q.attempts > 0),
       (SELECT e.last_error FROM {table} e WHERE e.{scope} = %(scope)s AND e.attempts > 0
        ORDER BY e.retry_at DESC LIMIT 1)
FROM {table} q WHERE q.{scope} = %(scope)s
"""
    for kind, table, scope in (
        ("memory", "memory_embedding_queue", "user_id"),
        ("chunk", "chunk_embedding_queue", "namespace"),
    )
}
# A scope's queued rows, counted by an erase before the deletes of their memories or chunks take
# them (the row first, then its queue row: the order every writer keeps).
QUEUED = {
    "memory": "SELECT count(*) FROM memory_embedding_queue WHERE user_id = %(scope)s",
    "chunk": "SELECT count(*) FROM chunk_embedding_queue WHERE namespace = %(scope)s",
}
EXPORT = {
    "memory": """
SELECT memory_id, model, generation, queued_at, attempts, retry_at, last_error
FROM memory_embedding_queue WHERE user_id = %(scope)s ORDER BY queued_at, memory_id
""",
}
