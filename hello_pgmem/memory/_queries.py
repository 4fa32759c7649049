"""Every statement on ``memories``, the table of long-term memories: the family's one owner.

Each statement names the user in its ``WHERE`` clause (row-level security checks it again);
ranked searches call the SQL functions of ``sql/``. Callers run these constants with bound
parameters and never compose SQL of their own.
"""

from __future__ import annotations

COLUMNS = "id, memory_type, content, importance, session_id, modality, metadata, created_at"
"""The columns of a memory (``rows.FIELDS``), in this order."""

# ---------------------------------------------------------------------------- writes

INSERT = """
INSERT INTO memories (user_id, id, memory_type, content, importance, session_id, modality,
                      metadata, created_at, embedding, embedding_model, text_embedding,
                      text_embedding_model)
VALUES (%(user_id)s, %(id)s, %(memory_type)s, %(content)s, %(importance)s, %(session_id)s,
        %(modality)s, %(metadata)s, %(created_at)s, %(embedding)s, %(model)s,
        %(text_embedding)s, %(text_model)s)
"""

INSERT_MANY = """
INSERT INTO memories (user_id, id, memory_type, content, importance, session_id, modality,
                      metadata, created_at, embedding, embedding_model, text_embedding,
                      text_embedding_model)
SELECT %(user_id)s, r.id, r.memory_type, r.content, r.importance, r.session_id, r.modality,
       r.metadata, r.created_at, r.embedding, r.model, r.text_embedding, r.text_model
FROM unnest(%(id)s::uuid[], %(memory_type)s::text[], %(content)s::text[], %(importance)s::float8[],
            %(session_id)s::text[], %(modality)s::text[], %(metadata)s::jsonb[],
            %(created_at)s::timestamptz[], %(embedding)b::vector[], %(model)s::text[],
            %(text_embedding)s::vector[], %(text_model)s::text[])
     WITH ORDINALITY AS r(id, memory_type, content, importance, session_id, modality, metadata,
                          created_at, embedding, model, text_embedding, text_model, position)
ORDER BY r.position
"""
"""``INSERT`` of many memories of one user in one statement (``Database.insert_rows``)."""
INSERT_COLUMNS = (
    "id",
    "memory_type",
    "content",
    "importance",
    "session_id",
    "modality",
    "metadata",
    "created_at",
    "embedding",
    "model",
    "text_embedding",
    "text_model",
)

# A new content is recorded now (two statements rather than a CASE around now(): Citus evaluates no
# STABLE function inside a CASE or COALESCE of a modification).
_UPDATE = """
UPDATE memories
SET {recorded}content = coalesce(%(content)s::text, content),
    importance = coalesce(%(importance)s::double precision, importance),
    metadata = metadata || %(metadata)s::jsonb,
    embedding = coalesce(%(embedding)s::vector, embedding),
    embedding_model = coalesce(%(model)s::text, embedding_model),
    text_embedding = coalesce(%(text_embedding)s::vector, text_embedding),
    text_embedding_model = coalesce(%(text_model)s::text, text_embedding_model),
    created_at = coalesce(%(valid_from)s::timestamptz, created_at),
    updated_at = now()
WHERE user_id = %(user_id)s AND id = %(id)s AND forgotten_at IS NULL AND version_of IS NULL
RETURNING memory_type
"""
UPDATE = _UPDATE.format(recorded="")
UPDATE_CONTENT = _UPDATE.format(recorded="recorded_at = now(),\n    ")

DELETE = "DELETE FROM memories WHERE user_id = %(user_id)s AND (id = %(id)s OR version_of = %(id)s)"
VERSION_IDS = "SELECT id FROM memories WHERE user_id = %(user_id)s AND version_of = ANY(%(ids)s)"
# An erase locks the user's memories in id order before it deletes them, as a worker's store does:
# neither then holds a row the other waits for while it waits.
LOCK_USER = "SELECT 1 FROM memories WHERE user_id = %(user_id)s ORDER BY id FOR UPDATE"
CLEAR_USER = "DELETE FROM memories WHERE user_id = %(user_id)s"
CLEAR_TYPE = "DELETE FROM memories WHERE user_id = %(user_id)s AND memory_type = %(memory_type)s"

FORGET_IMPORTANCE = """
UPDATE memories SET forgotten_at = %(now)s
WHERE user_id = %(user_id)s AND memory_type = %(memory_type)s AND forgotten_at IS NULL
  AND importance < %(threshold)s
"""

FORGET_TIME = """
UPDATE memories SET forgotten_at = %(now)s
WHERE user_id = %(user_id)s AND memory_type = %(memory_type)s AND forgotten_at IS NULL
  AND created_at < %(cutoff)s
"""

FORGET_CAPACITY = """
UPDATE memories m SET forgotten_at = %(now)s
FROM (SELECT id, row_number() OVER (ORDER BY importance DESC, created_at DESC, id) AS rank
      FROM memories
      WHERE user_id = %(user_id)s AND memory_type = %(memory_type)s AND forgotten_at IS NULL) r
WHERE m.user_id = %(user_id)s AND m.id = r.id AND r.rank > %(capacity)s
"""

RESTORE = """
UPDATE memories SET forgotten_at = NULL
WHERE user_id = %(user_id)s AND forgotten_at IS NOT NULL AND version_of IS NULL
  AND memory_type = ANY(%(types)s)
  AND (%(ids)s::uuid[] IS NULL OR id = ANY(%(ids)s::uuid[]))
  AND (%(since)s::timestamptz IS NULL OR forgotten_at >= %(since)s::timestamptz)
RETURNING id
"""
"""Forgotten memories back among the live ones, until ``maintain`` purges them."""

LOG_ACCESS = """
INSERT INTO memory_accesses (user_id, memory_id, accessed_at)
SELECT %(user_id)s, unnest(%(memory_id)s::uuid[]), %(now)s
"""
"""A search's accesses go to the UNLOGGED log, never to memories."""
LOG_ONE_ACCESS = """
INSERT INTO memory_accesses (user_id, memory_id, accessed_at) VALUES (%(user_id)s, %(memory_id)s, %(now)s)
"""

FOLD_ACCESSES = "SELECT fold_accesses(%(user_id)s)"
CLEAR_ACCESSES = "DELETE FROM memory_accesses WHERE user_id = %(user_id)s"

REFRESH = """
UPDATE memories
SET access_count = access_count + 1, last_accessed_at = %(now)s,
    importance = greatest(importance, %(importance)s), updated_at = now()
WHERE user_id = %(user_id)s AND id = %(id)s AND forgotten_at IS NULL
"""

APPLY_DECAY = "SELECT apply_decay(%(user_id)s, %(max_memories)s, %(now)s)"

# ---------------------------------------------------------------------------- consolidation

MOVE_FROM_WORKING = """
INSERT INTO memories (user_id, id, memory_type, content, importance, session_id, metadata,
                      created_at, embedding, embedding_model)
SELECT %(user_id)s, m.id, %(to_type)s, m.content, least(1.0, m.importance * 1.1), m.session_id,
       m.metadata || %(provenance)s::jsonb, m.created_at, m.embedding,
       CASE WHEN m.embedding IS NOT NULL THEN %(model)s END
FROM unnest(%(ids)s::uuid[], %(contents)s::text[], %(importances)s::float8[], %(sessions)s::text[],
            %(metadatas)s::jsonb[], %(created)s::timestamptz[], %(embeddings)s::vector[])
     AS m(id, content, importance, session_id, metadata, created_at, embedding)
RETURNING id, content
"""

LONG_TERM_CANDIDATES = """
SELECT id, content FROM memories
WHERE user_id = %(user_id)s AND memory_type = %(from_type)s AND forgotten_at IS NULL
  AND importance >= %(threshold)s
ORDER BY created_at, id
"""

BETWEEN_LONG_TERM = """
UPDATE memories m
SET memory_type = %(to_type)s,
    importance = least(1.0, m.importance * 1.1),
    metadata = m.metadata || %(provenance)s::jsonb,
    updated_at = now()
FROM unnest(%(ids)s::uuid[], %(contents)s::text[]) AS src(id, content)
WHERE m.user_id = %(user_id)s AND m.id = src.id AND m.content = src.content
  AND m.memory_type = %(from_type)s AND m.forgotten_at IS NULL AND m.importance >= %(threshold)s
RETURNING m.id, m.content
"""

# ---------------------------------------------------------------------------- reads

GET = f"""
SELECT {COLUMNS} FROM memories
WHERE user_id = %(user_id)s AND id = %(id)s AND forgotten_at IS NULL
"""

TYPE_OF = """
SELECT memory_type FROM memories WHERE user_id = %(user_id)s AND id = %(id)s AND forgotten_at IS NULL
"""

IDS_WITH_PREFIX = """
SELECT DISTINCT coalesce(version_of, id) FROM memories
WHERE user_id = %(user_id)s AND (forgotten_at IS NULL OR version_of IS NOT NULL)
  AND starts_with(id::text, %(prefix)s)
LIMIT 2
"""
"""The live memories whose id, or the id of one of whose earlier versions, starts with ``prefix``."""

FORGOTTEN_WITH_PREFIX = """
SELECT id FROM memories
WHERE user_id = %(user_id)s AND forgotten_at IS NOT NULL AND version_of IS NULL
  AND starts_with(id::text, %(prefix)s)
LIMIT 2
"""
"""The forgotten memories whose id starts with ``prefix`` (what restore may name)."""

MEMORY_OF = """
SELECT version_of FROM memories WHERE user_id = %(user_id)s AND id = %(id)s AND version_of IS NOT NULL
"""
"""The memory an earlier version (its id) belongs to; no row for any other id."""

FIND_BY_METADATA = """
SELECT id FROM memories
WHERE user_id = %(user_id)s AND forgotten_at IS NULL AND metadata ->> %(key)s = %(value)s
"""

MOST_IMPORTANT = f"""
SELECT {COLUMNS} FROM memories
WHERE user_id = %(user_id)s AND forgotten_at IS NULL AND memory_type = ANY(%(types)s)
  AND importance >= %(min_importance)s
ORDER BY importance DESC, created_at DESC, id
LIMIT %(limit)s
"""

STATS = """
SELECT count(*) FILTER (WHERE forgotten_at IS NULL),
       count(*) FILTER (WHERE forgotten_at IS NOT NULL),
       coalesce(avg(importance) FILTER (WHERE forgotten_at IS NULL), 0),
       count(DISTINCT session_id) FILTER (WHERE forgotten_at IS NULL),
       min(created_at) FILTER (WHERE forgotten_at IS NULL),
       max(created_at) FILTER (WHERE forgotten_at IS NULL)
FROM memories WHERE user_id = %(user_id)s AND memory_type = %(memory_type)s AND version_of IS NULL
"""

LIST = f"""
SELECT {COLUMNS} FROM memories
WHERE user_id = %(user_id)s AND memory_type = %(memory_type)s AND forgotten_at IS NULL
  AND importance >= %(min_importance)s
ORDER BY importance DESC, created_at DESC, id
LIMIT %(limit)s
"""

SESSION_EPISODES = f"""
SELECT {COLUMNS} FROM memories
WHERE user_id = %(user_id)s AND memory_type = 'episodic' AND session_id = %(session_id)s
  AND forgotten_at IS NULL
ORDER BY created_at, seq
LIMIT %(limit)s
"""

SEARCH_SESSIONS = """
SELECT session_id, score
FROM search_sessions(%(user_id)s, %(model)s, %(query)s, %(query_text)s, %(limit)s)
"""
"""The user's sessions that best match a query as whole documents, best first (sql/search.sql)."""

SESSION_MEMORIES = f"""
SELECT {COLUMNS} FROM (
    SELECT m.*, row_number() OVER (PARTITION BY m.session_id ORDER BY m.created_at, m.seq) AS n
    FROM memories m
    WHERE m.user_id = %(user_id)s AND m.session_id = ANY (%(sessions)s) AND m.memory_type = ANY (%(types)s)
      AND m.forgotten_at IS NULL
) AS s
WHERE s.n <= %(limit)s
ORDER BY s.session_id, s.created_at, s.seq
"""
"""The live memories of several sessions, each in the order it was written, at most ``limit`` each."""

SESSIONS = """
SELECT session_id, count(*), min(created_at), max(created_at) FROM memories
WHERE user_id = %(user_id)s AND memory_type = 'episodic' AND session_id IS NOT NULL
  AND forgotten_at IS NULL
GROUP BY session_id
ORDER BY max(created_at) DESC
LIMIT %(limit)s
"""

SEMANTIC_USERS = """
SELECT DISTINCT user_id FROM memories
WHERE memory_type = 'semantic' AND (%(user_id)s::text IS NULL OR user_id = %(user_id)s)
"""

SEMANTIC_IDS = """
SELECT id::text FROM memories
WHERE user_id = %(user_id)s AND memory_type = 'semantic' AND version_of IS NULL ORDER BY id
"""

# ---------------------------------------------------------------------------- maintenance (all users)

USERS_OVER = """
SELECT user_id FROM memories WHERE forgotten_at IS NULL GROUP BY user_id HAVING count(*) > %(max)s
"""

# Memories forgotten before the cutoff with their earlier versions, and versions retired before
# the history cutoff.
PURGEABLE = """
SELECT m.user_id, array_agg(m.id) FROM memories m
WHERE m.forgotten_at IS NOT NULL AND (
    m.version_of IS NULL AND m.forgotten_at < %(cutoff)s
    OR m.version_of IS NOT NULL AND (
        m.forgotten_at < %(history_cutoff)s
        OR EXISTS (SELECT 1 FROM memories o WHERE o.user_id = m.user_id AND o.id = m.version_of
                   AND o.forgotten_at < %(cutoff)s)))
GROUP BY m.user_id
"""

PURGE = "DELETE FROM memories WHERE user_id = %(user_id)s AND id = ANY(%(ids)s)"
