"""Every statement on ``memories``, the table of long-term memories: the family's one owner.

Each statement names the user in its ``WHERE`` clause (row-level security checks it again);
ranked searches call the SQL functions of ``sql/``. Callers run these constants with bound
parameters and never compose SQL of their own.
"""

from __future__ import annotations

import functools

from psycopg import sql

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

UPDATE = """
UPDATE memories
SET content = coalesce(%(content)s::text, content),
    importance = coalesce(%(importance)s::double precision, importance),
    metadata = metadata || %(metadata)s::jsonb,
    embedding = coalesce(%(embedding)s::vector, embedding),
    embedding_model = coalesce(%(model)s::text, embedding_model),
    text_embedding = coalesce(%(text_embedding)s::vector, text_embedding),
    text_embedding_model = coalesce(%(text_model)s::text, text_embedding_model),
    updated_at = now()
WHERE user_id = %(user_id)s AND id = %(id)s AND forgotten_at IS NULL
RETURNING memory_type
"""

DELETE = "DELETE FROM memories WHERE user_id = %(user_id)s AND id = %(id)s"
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
WHERE user_id = %(user_id)s AND forgotten_at IS NOT NULL AND memory_type = ANY(%(types)s)
  AND (%(ids)s::uuid[] IS NULL OR id = ANY(%(ids)s::uuid[]))
  AND (%(since)s::timestamptz IS NULL OR forgotten_at >= %(since)s::timestamptz)
"""
"""Forgotten memories back among the live ones, until ``maintain`` purges them."""

LOG_ACCESS = """
INSERT INTO memory_accesses (user_id, memory_id, accessed_at)
SELECT %(user_id)s, unnest(%(memory_id)s::uuid[]), %(now)s
"""
"""A search's accesses go to the UNLOGGED log, never to memories (revision 0010)."""
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
       m.metadata || %(provenance)s::jsonb, m.created_at, m.embedding, %(model)s
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
SELECT id FROM memories
WHERE user_id = %(user_id)s AND forgotten_at IS NULL AND starts_with(id::text, %(prefix)s)
LIMIT 2
"""

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
FROM memories WHERE user_id = %(user_id)s AND memory_type = %(memory_type)s
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
ORDER BY created_at, id
LIMIT %(limit)s
"""

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
SELECT id::text FROM memories WHERE user_id = %(user_id)s AND memory_type = 'semantic' ORDER BY id
"""

# ---------------------------------------------------------------------------- ranked search

HYBRID_SCORES = (
    "vector_score",
    "text_score",
    "context_score",
    "session_score",
    "speaker_score",
    "graph_score",
    "time_score",
    "recency_score",
)
"""The components search_memories returns between ``COLUMNS`` and importance_weight, score."""

SEARCH_COLUMNS = (*COLUMNS.split(", "), *HYBRID_SCORES, "importance_weight", "score")
"""The columns of ``SEARCH`` (and of ``vector_ranked``), in order."""

_SEARCH_CALL = """search_memories(
    %(user_id)s, %(model)s, %(query)s, %(query_text)s, %(limit)s, %(types)s, %(session_id)s, %(since)s,
    %(until)s, %(min_importance)s, %(modality)s, %(space)s, %(now)s, %(names)s, %(seeds)s, %(max_hops)s,
    %(time_from)s, %(time_to)s, %(mode)s, %(fusion)s, %(per_type)s)"""

SEARCH = f"""
SELECT {", ".join(SEARCH_COLUMNS)}
FROM {_SEARCH_CALL}
"""

SEARCH_DELEGATED = f"SELECT {_SEARCH_CALL}"
"""``SEARCH`` as Citus delegates it, whole, to the worker that holds the user (``Database.call_rows``)."""

SEARCH_AND_LOG = f"""
WITH found AS MATERIALIZED ({SEARCH}), logged AS (
    INSERT INTO memory_accesses (user_id, memory_id, accessed_at)
    SELECT %(user_id)s, f.id, %(now)s FROM found f
)
SELECT * FROM found ORDER BY score DESC, id
"""
"""``SEARCH`` that also logs an access of every memory it returns, in the same statement."""

_VECTOR_RANKED = """
WITH found AS MATERIALIZED (
    SELECT s.id, s.memory_type, s.content, s.importance, s.session_id, s.modality, s.metadata,
           s.created_at, s.vector_n AS vector_score, 0::float8 AS text_score, 0::float8 AS context_score,
           0::float8 AS session_score, 0::float8 AS speaker_score, 0::float8 AS graph_score,
           s.in_time::float8 AS time_score, s.recency AS recency_score, importance_weight(s.importance),
           s.vector_n + 0.2 * s.in_time + 0.01 * s.recency + 0.01 * s.importance AS score, s.candidates
    FROM (SELECT n.*, coalesce(n.vector_raw / nullif(max(n.vector_raw) OVER (), 0), 0) AS vector_n,
                 count(*) OVER () AS candidates,
                 CASE WHEN %(time_from)s::timestamptz IS NOT NULL AND n.created_at >= %(time_from)s
                           AND (%(time_to)s::timestamptz IS NULL OR n.created_at < %(time_to)s)
                      THEN 1.0 ELSE 0.0 END AS in_time,
                 episodic_recency(greatest(0, extract(epoch FROM %(now)s::timestamptz - n.created_at)::float8
                                              / 86400)) AS recency
          FROM (SELECT m.id, m.memory_type, m.content, m.importance, m.session_id, m.modality, m.metadata,
                       m.created_at,
                       greatest(0, 1 - (m.embedding::{type}({dimension}) <=> %(query)s::{type}({dimension})))
                       AS vector_raw
                FROM memories m
                WHERE m.user_id = %(user_id)s AND m.embedding_model = {model} AND m.forgotten_at IS NULL
                  AND m.memory_type = ANY (%(types)s)
                ORDER BY m.embedding::{type}({dimension}) <=> %(query)s::{type}({dimension})
                LIMIT %(pool)s) AS n) AS s
    ORDER BY score DESC, s.id
    LIMIT %(limit)s
), answer AS MATERIALIZED (  -- a short scan is not the answer: the function's exact fallback is
    SELECT {columns} FROM found
    WHERE (SELECT coalesce(max(candidates), 0) FROM found) >= %(pool)s
    UNION ALL
    SELECT {columns} FROM {call}
    WHERE (SELECT coalesce(max(candidates), 0) FROM found) < %(pool)s
), logged AS (
    INSERT INTO memory_accesses (user_id, memory_id, accessed_at)
    SELECT %(user_id)s, a.id, %(now)s FROM answer a
    WHERE %(log)s
)
SELECT * FROM answer ORDER BY score DESC, id
"""

VECTOR_SCAN = """
SELECT set_config('hnsw.ef_search', hnsw_ef_search(%(model)s, %(pool)s)::text, true),
       set_config('hnsw.iterative_scan', 'relaxed_order', true)
"""
"""The HNSW scan settings of ``vector_ranked``'s transaction (those memory_candidates sets)."""


@functools.cache
def vector_ranked(model: str, dimension: int) -> str:
    """``search_memories(…, p_mode => 'vector')`` of episodic and semantic memories, without filters,
    as one plain statement: the same rows and scores in ``SEARCH``'s columns, planned in a
    fraction of the time the function's dynamic SQL takes. ``pool`` is the function's: the
    limit, or at least 40 when the query names a time (``time_from``, ``time_to``), which lifts a
    memory in that range. An HNSW scan can come back with fewer than the pool: the statement then
    answers with the function itself (``SEARCH``'s parameters), whose exact fallback fills it, and
    the function is not run otherwise. The model is a literal so that the planner matches its
    partial HNSW index; the type and typmod are those of the index (halfvec above 2,000
    dimensions, as ``vector_type_for``). With ``log`` true it logs an access of each memory it
    returns. Its transaction runs ``VECTOR_SCAN`` first."""
    kind = "halfvec" if dimension > 2000 else "vector"
    columns = sql.SQL(", ").join(map(sql.Identifier, SEARCH_COLUMNS))
    composed = sql.SQL(_VECTOR_RANKED).format(
        type=sql.SQL(kind),
        dimension=sql.Literal(int(dimension)),
        model=sql.Literal(model),
        columns=columns,
        call=sql.SQL(_SEARCH_CALL),
    )
    return composed.as_string()  # composed once: each search sends the same text


SEARCH_EPISODIC = """
SELECT id, memory_type, content, importance, session_id, NULL::text AS modality, metadata,
       created_at, vector_score, recency_score, importance_weight, score
FROM search_episodic(%(user_id)s, %(model)s, %(query)s, %(limit)s, %(session_id)s, %(since)s,
                     %(until)s, %(min_importance)s, %(now)s)
"""

SEARCH_SEMANTIC = """
SELECT id, memory_type, content, importance, session_id, NULL::text AS modality, metadata,
       created_at, vector_score, graph_score, importance_weight, score
FROM search_semantic(%(user_id)s, %(model)s, %(query)s, %(seeds)s, %(limit)s, %(max_hops)s,
                     %(since)s, %(until)s, %(min_importance)s)
"""

SEARCH_PERCEPTUAL = """
SELECT id, memory_type, content, importance, NULL::text AS session_id, modality, metadata,
       created_at, vector_score, recency_score, importance_weight, score
FROM search_perceptual(%(user_id)s, %(model)s, %(query)s, %(limit)s, %(modality)s, %(since)s,
                       %(until)s, %(min_importance)s, %(now)s, %(space)s)
"""

KEYWORD = f"""
SELECT {COLUMNS}, 0.5::double precision AS vector_score, r.recency AS recency_score,
       importance_weight(importance) AS importance_weight,
       CASE WHEN memory_type = 'semantic' THEN semantic_score(0.5, 0, importance)
            ELSE episodic_score(0.5, r.recency, importance) END AS score
FROM memories
CROSS JOIN LATERAL (SELECT episodic_recency(
    greatest(0, extract(epoch FROM %(now)s::timestamptz - created_at)::float8 / 86400)) AS recency) r
WHERE user_id = %(user_id)s AND memory_type = %(memory_type)s AND forgotten_at IS NULL
  AND (lexemes @@ terms_query(query_terms(%(query)s)) OR strpos(lower(content), lower(%(query)s)) > 0)
  AND (%(session_id)s::text IS NULL OR session_id = %(session_id)s)
  AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR created_at <= %(until)s)
  AND (%(min_importance)s::double precision IS NULL OR importance >= %(min_importance)s)
ORDER BY score DESC, id
LIMIT %(limit)s
"""

NEAREST = """
SELECT c.id, c.vector_score, m.content, m.memory_type
FROM memory_candidates(%(user_id)s, %(model)s, %(query)s, %(pool)s, %(types)s) AS c
JOIN memories m ON m.user_id = %(user_id)s AND m.id = c.id
ORDER BY c.vector_score DESC
"""

# ---------------------------------------------------------------------------- re-embedding

_TEXT_ROWS = {  # vector column -> the rows that hold a text vector in it
    "embedding": sql.SQL("(memory_type <> 'perceptual' OR modality IS NULL OR modality = 'text')"),
    "text_embedding": sql.SQL("memory_type = 'perceptual'"),
}
VECTOR_COLUMNS = tuple(_TEXT_ROWS)

_PENDING = """
SELECT user_id, id, content FROM memories
WHERE {rows} AND {model_column} IS DISTINCT FROM %(model)s
  AND (%(user_id)s::text IS NULL OR user_id = %(user_id)s)
ORDER BY user_id, id
LIMIT %(batch)s
"""

_REEMBED = """
UPDATE memories m
SET {column} = src.embedding, {model_column} = %(model)s, updated_at = now()
FROM unnest(%(users)s::text[], %(ids)s::uuid[], %(contents)s::text[], %(embeddings)s::vector[])
     AS src(user_id, id, content, embedding)
WHERE m.user_id = src.user_id AND m.id = src.id AND m.content = src.content
"""

_REMAINING = """
SELECT count(*) FROM memories
WHERE {rows} AND {model_column} IS DISTINCT FROM %(model)s
  AND (%(user_id)s::text IS NULL OR user_id = %(user_id)s)
"""


def reembed_statements(column: str) -> tuple[sql.Composed, sql.Composed, sql.Composed]:
    """The pending, write and remaining statements of re-embedding one vector column."""
    names = {
        "column": sql.Identifier(column),
        "model_column": sql.Identifier(f"{column}_model"),
        "rows": _TEXT_ROWS[column],
    }
    return tuple(sql.SQL(text).format(**names) for text in (_PENDING, _REEMBED, _REMAINING))  # type: ignore[return-value]


# ---------------------------------------------------------------------------- maintenance (all users)

USERS_OVER = """
SELECT user_id FROM memories WHERE forgotten_at IS NULL GROUP BY user_id HAVING count(*) > %(max)s
"""

PURGEABLE = """
SELECT user_id, array_agg(id) FROM memories
WHERE forgotten_at IS NOT NULL AND forgotten_at < %(cutoff)s
GROUP BY user_id
"""

PURGE = "DELETE FROM memories WHERE user_id = %(user_id)s AND id = ANY(%(ids)s)"
