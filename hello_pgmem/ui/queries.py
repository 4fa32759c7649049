"""The statements of the web view. Each runs in a read-only transaction scoped to the viewer's
user (and namespace), so row-level security decides what it sees; the ``user_id`` in a
``WHERE`` only lets the planner use the indexes."""

MEMORY_COLUMNS = (
    "id",
    "memory_type",
    "content",
    "importance",
    "session_id",
    "created_at",
    "forgotten_at",
    "access_count",
)

# One index scan per type (memories_user_type_created, backwards), merged: a page costs the same
# at the first page and the thousandth, at 100 or 100,000 memories. Accesses count those folded
# into the memory and those still in the access log (as the statistics do).
MEMORY_PAGE = """
WITH page AS (
SELECT m.id, m.memory_type, m.content, m.importance, m.session_id, m.created_at, m.forgotten_at,
       m.access_count
FROM unnest(%(types)s::text[]) AS kind(memory_type)
CROSS JOIN LATERAL (
    SELECT id, memory_type, content, importance, session_id, created_at, forgotten_at, access_count
    FROM memories
    WHERE user_id = %(user_id)s AND memory_type = kind.memory_type AND version_of IS NULL
      AND _passes_filters(memory_type, session_id, created_at, importance, modality, metadata, %(filter)s)
      AND (%(live_only)s IS FALSE OR forgotten_at IS NULL)
      AND (%(before_at)s::timestamptz IS NULL OR (created_at, id) < (%(before_at)s, %(before_id)s::uuid))
    ORDER BY created_at DESC, id DESC
    LIMIT %(limit)s
) m
ORDER BY m.created_at DESC, m.id DESC
LIMIT %(limit)s
)
SELECT page.id, page.memory_type, page.content, page.importance, page.session_id, page.created_at,
       page.forgotten_at, page.access_count + coalesce(logged.accesses, 0)::integer AS access_count
FROM page
LEFT JOIN (SELECT a.memory_id, count(*) AS accesses FROM memory_accesses a
           WHERE a.user_id = %(user_id)s AND a.memory_id IN (SELECT id FROM page)
           GROUP BY a.memory_id) AS logged ON logged.memory_id = page.id
ORDER BY page.created_at DESC, page.id DESC
"""

WORKING_PAGE = """
SELECT id, 'working', content, importance, session_id, created_at,
       CASE WHEN expires_at <= now() THEN expires_at END, 0
FROM working_memories
WHERE user_id = %(user_id)s
  AND (%(session_id)s::text IS NULL OR session_id = %(session_id)s)
  AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
  AND (%(min_importance)s::float8 IS NULL OR importance >= %(min_importance)s)
  AND (%(live_only)s IS FALSE OR expires_at > now())
  AND (%(before_at)s::timestamptz IS NULL OR (created_at, id) < (%(before_at)s, %(before_id)s::uuid))
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s
"""

COUNTS = """
SELECT memory_type, live, forgotten, avg_importance, oldest, newest, accesses
FROM memory_stats WHERE user_id = %(user_id)s ORDER BY memory_type
"""

# The list page's counts: what memory_stats says, without its median age (a sort of every row).
TYPE_COUNTS = """
SELECT memory_type, count(*) FILTER (WHERE forgotten_at IS NULL) AS live,
       count(*) FILTER (WHERE forgotten_at IS NOT NULL) AS forgotten,
       round(avg(importance) FILTER (WHERE forgotten_at IS NULL)::numeric, 3) AS avg_importance,
       sum((m.access_count + coalesce(p.accesses, 0))::integer) FILTER (WHERE forgotten_at IS NULL)
           AS accesses
FROM memories m
LEFT JOIN pending_accesses p ON p.user_id = m.user_id AND p.memory_id = m.id
WHERE m.user_id = %(user_id)s AND m.version_of IS NULL GROUP BY memory_type
UNION ALL
SELECT 'working', count(*) FILTER (WHERE expires_at > now()), count(*) FILTER (WHERE expires_at <= now()),
       round(avg(importance) FILTER (WHERE expires_at > now())::numeric, 3), NULL
FROM working_memories WHERE user_id = %(user_id)s HAVING count(*) > 0
ORDER BY 1
"""

SESSIONS = """
SELECT session_id, count(*) FROM memories
WHERE user_id = %(user_id)s AND session_id IS NOT NULL
GROUP BY session_id ORDER BY max(created_at) DESC LIMIT 200
"""

MEMORY = """
SELECT id, memory_type, content, importance, session_id, modality, metadata, created_at, updated_at,
       recorded_at, last_accessed_at, access_count, forgotten_at, embedding_model, seq, valid_to,
       superseded_at, version_of
FROM memories WHERE user_id = %(user_id)s AND id = %(id)s
"""

MEMORY_RELATIONS = """
SELECT s.name, r.relation_type, t.name, r.weight
FROM relations r
JOIN entities s ON s.user_id = r.user_id AND s.id = r.source_id
JOIN entities t ON t.user_id = r.user_id AND t.id = r.target_id
WHERE r.user_id = %(user_id)s AND r.memory_id = %(id)s
ORDER BY 1, 2, 3
"""

PENDING_ACCESSES = """
SELECT coalesce(sum(accesses), 0)::integer, max(last_accessed_at)
FROM pending_accesses WHERE user_id = %(user_id)s AND memory_id = %(id)s
"""

TOP_ENTITIES = """
SELECT name, entity_type, mentions FROM entity_stats WHERE user_id = %(user_id)s AND mentions > 0
ORDER BY mentions DESC, name
LIMIT %(limit)s
"""

MONTHLY = """
SELECT date_trunc('month', created_at) AS month, memory_type, count(*)
FROM memories WHERE user_id = %(user_id)s AND forgotten_at IS NULL
GROUP BY 1, 2 ORDER BY 1, 2
"""

RELATION_WEIGHTS = """
SELECT source, relation_type, target, weight, memories
FROM relation_weights WHERE user_id = %(user_id)s
ORDER BY weight DESC, source, relation_type, target LIMIT 20
"""

NAMESPACES = """
SELECT namespace, documents, chunks, tokens, last_ingest FROM rag_namespaces
WHERE namespace = %(namespace)s
"""

DOCUMENTS = """
SELECT id, title, source_path, format, chunk_count, token_count, last_ingest
FROM rag_documents WHERE namespace = %(namespace)s
ORDER BY last_ingest DESC, id LIMIT 500
"""

DOCUMENT = """
SELECT id, title, source_path, format, chunk_count, token_count, last_ingest
FROM rag_documents WHERE namespace = %(namespace)s AND id = %(document_id)s
"""

CHUNKS = """
SELECT position, heading_path, content, token_count, start_char, end_char
FROM chunks WHERE namespace = %(namespace)s AND document_id = %(document_id)s
ORDER BY position LIMIT 2000
"""
