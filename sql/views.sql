-- The analytics views and their functions. Every view reads the live tables and stores nothing, and
-- runs with the privileges and policies of whoever queries it (security_invoker).
-- Applied by every migration in which this file changed (sql/README.md); tests/test_sql_live.py
-- holds it equal to a migrated database.

CREATE OR REPLACE FUNCTION near_duplicates(p_user_id text, p_threshold double precision DEFAULT 0.95,
                                p_limit integer DEFAULT 100)
RETURNS TABLE (id uuid, duplicate_of uuid, similarity double precision, content text, other_content text)
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT a.id, b.id, 1 - (a.embedding <=> b.embedding), a.content, b.content
    FROM memories a
    JOIN memories b ON b.user_id = a.user_id AND b.id < a.id AND b.embedding_model = a.embedding_model
    WHERE a.user_id = p_user_id AND a.forgotten_at IS NULL AND b.forgotten_at IS NULL
      AND a.embedding IS NOT NULL AND 1 - (a.embedding <=> b.embedding) >= p_threshold
    ORDER BY 3 DESC, 1, 2
    LIMIT p_limit
$$;
COMMENT ON FUNCTION near_duplicates(text, double precision, integer) IS
    'Pairs of live memories of one user whose vectors (same model) have a cosine similarity of at '
    'least p_threshold. Compares every pair of the user: meant for occasional review.';

CREATE OR REPLACE VIEW pending_accesses WITH (security_invoker = true) AS
SELECT user_id, memory_id, count(*) AS accesses, max(accessed_at) AS last_accessed_at
FROM memory_accesses
GROUP BY user_id, memory_id;
COMMENT ON VIEW pending_accesses IS 'Per memory: the accesses the log holds that are not folded yet.';

CREATE OR REPLACE VIEW memory_stats WITH (security_invoker = true) AS
SELECT m.user_id, m.memory_type,
       count(*) FILTER (WHERE m.forgotten_at IS NULL) AS live,
       count(*) FILTER (WHERE m.forgotten_at IS NOT NULL) AS forgotten,
       round((count(*) FILTER (WHERE m.forgotten_at IS NOT NULL))::numeric / count(*), 3) AS forgotten_share,
       round(avg(m.importance) FILTER (WHERE m.forgotten_at IS NULL)::numeric, 3) AS avg_importance,
       min(m.created_at) FILTER (WHERE m.forgotten_at IS NULL) AS oldest,
       max(m.created_at) FILTER (WHERE m.forgotten_at IS NULL) AS newest,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM now() - m.created_at) / 86400)
              FILTER (WHERE m.forgotten_at IS NULL))::numeric, 1) AS median_age_days,
       sum((m.access_count + coalesce(p.accesses, 0))::integer) FILTER (WHERE m.forgotten_at IS NULL) AS accesses,
       count(*) FILTER (WHERE m.forgotten_at IS NULL AND m.access_count = 0 AND p.accesses IS NULL)
           AS never_accessed
FROM memories m
LEFT JOIN pending_accesses p ON p.user_id = m.user_id AND p.memory_id = m.id
WHERE m.version_of IS NULL
GROUP BY m.user_id, m.memory_type
UNION ALL
SELECT user_id, 'working',
       count(*) FILTER (WHERE expires_at > now()), count(*) FILTER (WHERE expires_at <= now()),
       round((count(*) FILTER (WHERE expires_at <= now()))::numeric / count(*), 3),
       round(avg(importance) FILTER (WHERE expires_at > now())::numeric, 3),
       min(created_at) FILTER (WHERE expires_at > now()), max(created_at) FILTER (WHERE expires_at > now()),
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM now() - created_at) / 86400)
              FILTER (WHERE expires_at > now()))::numeric, 1),
       NULL, NULL
FROM working_memories
GROUP BY user_id;
COMMENT ON VIEW memory_stats IS
    'Per user and memory type: live and forgotten (for working memory: expired) counts, average '
    'importance, age, accesses.';
COMMENT ON COLUMN memory_stats.live IS 'Memories that searches can return.';
COMMENT ON COLUMN memory_stats.forgotten IS 'Forgotten long-term memories, or expired working memories not yet swept.';
COMMENT ON COLUMN memory_stats.median_age_days IS 'Median age of the live memories, in days.';
COMMENT ON COLUMN memory_stats.never_accessed IS 'Live long-term memories no search has returned yet.';

CREATE OR REPLACE VIEW memory_duplicates WITH (security_invoker = true) AS
SELECT user_id, memory_type, count(*) AS copies, array_agg(id ORDER BY created_at) AS ids,
       min(content) AS example
FROM memories
WHERE forgotten_at IS NULL
-- [:punct:] follows the database's locale (only ASCII under C), so CJK punctuation is listed too
GROUP BY user_id, memory_type,
         md5(regexp_replace(lower(normalize(content, NFKC)), '[[:space:][:punct:]。、「」『』【】《》〈〉〔〕…—～·]', '', 'g'))
HAVING count(*) > 1;
COMMENT ON VIEW memory_duplicates IS
    'Live memories of one user and type whose text is identical once case, width, spaces and '
    'punctuation are ignored. For vector near-duplicates use near_duplicates(user, threshold).';

CREATE OR REPLACE VIEW stale_memories WITH (security_invoker = true) AS
SELECT m.user_id, m.id, m.memory_type, m.content, m.importance, m.created_at, m.access_count,
       m.last_accessed_at, retention_score(m.importance, m.last_accessed_at, m.access_count, now()) AS retention
FROM memories m
WHERE m.forgotten_at IS NULL AND m.last_accessed_at IS NULL AND m.created_at < now() - interval '90 days'
  AND m.importance < 0.3
  AND NOT EXISTS (SELECT 1 FROM memory_accesses a WHERE a.user_id = m.user_id AND a.memory_id = m.id);
COMMENT ON VIEW stale_memories IS
    'Live memories never returned by a search, older than 90 days and of importance below 0.3.';

CREATE OR REPLACE VIEW decay_candidates WITH (security_invoker = true) AS
SELECT m.user_id, m.id, m.memory_type, m.content, m.importance,
       (m.access_count + coalesce(p.accesses, 0))::integer AS access_count,
       greatest(m.last_accessed_at, p.last_accessed_at) AS last_accessed_at,
       retention_score(m.importance, greatest(m.last_accessed_at, p.last_accessed_at),
                       (m.access_count + coalesce(p.accesses, 0))::integer, now()) AS retention,
       row_number() OVER (PARTITION BY m.user_id
                          ORDER BY retention_score(m.importance, greatest(m.last_accessed_at, p.last_accessed_at),
                                                   (m.access_count + coalesce(p.accesses, 0))::integer, now()),
                                   m.created_at, m.id) AS eviction_rank
FROM memories m
LEFT JOIN pending_accesses p ON p.user_id = m.user_id AND p.memory_id = m.id
WHERE m.forgotten_at IS NULL;
COMMENT ON VIEW decay_candidates IS
    'Every live long-term memory with its retention_score and its rank in the order apply_decay '
    'would evict it (1 = first to go).';

CREATE OR REPLACE VIEW graph_orphans WITH (security_invoker = true) AS
SELECT e.user_id, e.id, e.name, e.entity_type
FROM entities e
WHERE NOT EXISTS (SELECT 1 FROM mentions m WHERE m.user_id = e.user_id AND m.entity_id = e.id);
COMMENT ON VIEW graph_orphans IS
    'Entities no memory mentions (the library removes them; any row here is drift to repair).';

CREATE OR REPLACE VIEW entity_stats WITH (security_invoker = true) AS
SELECT e.user_id, e.id, e.name, e.entity_type,
       (SELECT count(*) FROM mentions m
        JOIN memories x ON x.user_id = m.user_id AND x.id = m.memory_id
        WHERE m.user_id = e.user_id AND m.entity_id = e.id
          AND x.version_of IS NULL AND x.forgotten_at IS NULL) AS mentions,
       (SELECT count(*) FROM relations r WHERE r.user_id = e.user_id
          AND (r.source_id = e.id OR r.target_id = e.id)
          AND r.superseded_at IS NULL AND (r.valid_to IS NULL OR r.valid_to > now())) AS degree
FROM entities e;
COMMENT ON VIEW entity_stats IS
    'Entities with the number of live memories mentioning them and their relations that hold now, as '
    'now known (earlier versions, forgotten memories and closed or superseded relations do not count).';

CREATE OR REPLACE VIEW relation_weights WITH (security_invoker = true) AS
SELECT r.user_id, s.name AS source, r.relation_type, t.name AS target,
       sum(r.weight) AS weight, count(DISTINCT r.memory_id) AS memories, max(r.updated_at) AS last_asserted
FROM relations r
JOIN entities s ON s.user_id = r.user_id AND s.id = r.source_id
JOIN entities t ON t.user_id = r.user_id AND t.id = r.target_id
WHERE r.superseded_at IS NULL AND (r.valid_to IS NULL OR r.valid_to > now())
GROUP BY r.user_id, s.name, r.relation_type, t.name;
COMMENT ON VIEW relation_weights IS
    'The relations that hold now, as now known, by name, with their total weight (one per asserting '
    'memory, more when re-asserted); relations_as_of answers for another time.';

CREATE OR REPLACE VIEW top_entities WITH (security_invoker = true) AS
SELECT user_id, name, entity_type, mentions, degree, rank
FROM (SELECT *, row_number() OVER (PARTITION BY user_id ORDER BY mentions DESC, degree DESC, name) AS rank
      FROM entity_stats) ranked
WHERE rank <= 10;
COMMENT ON VIEW top_entities IS 'The ten most mentioned entities of each user.';

CREATE OR REPLACE VIEW rag_documents WITH (security_invoker = true) AS
SELECT d.namespace, d.id, d.source_path, d.title, d.chunk_count, d.token_count,
       d.metadata ->> 'format' AS format, d.created_at, d.updated_at AS last_ingest
FROM documents d;
COMMENT ON VIEW rag_documents IS 'RAG documents with chunk and token counts and their last ingest.';

CREATE OR REPLACE VIEW rag_namespaces WITH (security_invoker = true) AS
SELECT namespace, count(*) AS documents, sum(chunk_count) AS chunks, sum(token_count) AS tokens,
       max(updated_at) AS last_ingest
FROM documents
GROUP BY namespace;
COMMENT ON VIEW rag_namespaces IS 'Each RAG namespace with its document, chunk and token totals.';

CREATE OR REPLACE VIEW relation_edges WITH (security_invoker = true) AS
    SELECT user_id, source_id AS from_id, target_id AS to_id, relation_type, memory_id, weight,
           'out'::text AS direction
    FROM relations
    WHERE superseded_at IS NULL AND (valid_to IS NULL OR valid_to > now())
    UNION ALL
    SELECT user_id, target_id, source_id, relation_type, memory_id, weight, 'in'
    FROM relations
    WHERE superseded_at IS NULL AND (valid_to IS NULL OR valid_to > now());
COMMENT ON VIEW relation_edges IS
    'Every relation that holds now, as now known, in both directions (from_id -> to_id), for '
    'undirected graph walks.';

CREATE OR REPLACE VIEW memory_history WITH (security_invoker = true) AS
SELECT m.user_id, coalesce(m.version_of, m.id) AS memory_id, m.id AS version_id, m.memory_type,
       m.content, m.importance, m.session_id, m.created_at AS valid_from, m.valid_to, m.recorded_at,
       m.superseded_at, m.forgotten_at, m.version_of IS NULL AS is_current_row, m.metadata
FROM memories m;
COMMENT ON VIEW memory_history IS
    'Every version of every long-term memory with its valid period (valid_from, valid_to) and its '
    'recorded period (recorded_at, superseded_at); memory_id names the memory, version_id the row.';

CREATE OR REPLACE VIEW current_facts WITH (security_invoker = true) AS
SELECT m.user_id, m.id AS memory_id, m.memory_type, m.content, m.importance, m.session_id,
       m.created_at AS valid_from, m.recorded_at
FROM memories m
WHERE m.forgotten_at IS NULL AND m.superseded_at IS NULL AND (m.valid_to IS NULL OR m.valid_to > now());
COMMENT ON VIEW current_facts IS 'The long-term memories that hold now, as now known (what a search sees).';
