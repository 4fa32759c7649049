-- Revision 0006: views for analysts, and the optional retrieval log.
-- Every view reads the live tables; none stores anything.

CREATE VIEW memory_stats AS
SELECT user_id, memory_type,
       count(*) FILTER (WHERE forgotten_at IS NULL) AS live,
       count(*) FILTER (WHERE forgotten_at IS NOT NULL) AS forgotten,
       round((count(*) FILTER (WHERE forgotten_at IS NOT NULL))::numeric / count(*), 3) AS forgotten_share,
       round(avg(importance) FILTER (WHERE forgotten_at IS NULL)::numeric, 3) AS avg_importance,
       min(created_at) FILTER (WHERE forgotten_at IS NULL) AS oldest,
       max(created_at) FILTER (WHERE forgotten_at IS NULL) AS newest,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM now() - created_at) / 86400)
              FILTER (WHERE forgotten_at IS NULL))::numeric, 1) AS median_age_days,
       sum(access_count) FILTER (WHERE forgotten_at IS NULL) AS accesses,
       count(*) FILTER (WHERE forgotten_at IS NULL AND access_count = 0) AS never_accessed
FROM memories
GROUP BY user_id, memory_type
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

CREATE VIEW memory_duplicates AS
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

CREATE FUNCTION near_duplicates(p_user_id text, p_threshold double precision DEFAULT 0.95,
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

CREATE VIEW stale_memories AS
SELECT user_id, id, memory_type, content, importance, created_at, access_count, last_accessed_at,
       retention_score(importance, last_accessed_at, access_count, now()) AS retention
FROM memories
WHERE forgotten_at IS NULL AND last_accessed_at IS NULL AND created_at < now() - interval '90 days'
  AND importance < 0.3;
COMMENT ON VIEW stale_memories IS
    'Live memories never returned by a search, older than 90 days and of importance below 0.3.';

CREATE VIEW decay_candidates AS
SELECT user_id, id, memory_type, content, importance, access_count, last_accessed_at,
       retention_score(importance, last_accessed_at, access_count, now()) AS retention,
       row_number() OVER (PARTITION BY user_id
                          ORDER BY retention_score(importance, last_accessed_at, access_count, now()),
                                   created_at, id) AS eviction_rank
FROM memories
WHERE forgotten_at IS NULL;
COMMENT ON VIEW decay_candidates IS
    'Every live long-term memory with its retention_score and its rank in the order apply_decay '
    'would evict it (1 = first to go).';

CREATE VIEW graph_orphans AS
SELECT e.user_id, e.id, e.name, e.entity_type
FROM entities e
WHERE NOT EXISTS (SELECT 1 FROM mentions m WHERE m.user_id = e.user_id AND m.entity_id = e.id);
COMMENT ON VIEW graph_orphans IS
    'Entities no memory mentions (the library removes them; any row here is drift to repair).';

CREATE VIEW entity_stats AS
SELECT e.user_id, e.id, e.name, e.entity_type,
       (SELECT count(*) FROM mentions m WHERE m.user_id = e.user_id AND m.entity_id = e.id) AS mentions,
       (SELECT count(*) FROM relations r WHERE r.user_id = e.user_id
          AND (r.source_id = e.id OR r.target_id = e.id)) AS degree
FROM entities e;
COMMENT ON VIEW entity_stats IS 'Entities with the number of memories mentioning them and their relation count.';

CREATE VIEW relation_weights AS
SELECT r.user_id, s.name AS source, r.relation_type, t.name AS target,
       sum(r.weight) AS weight, count(DISTINCT r.memory_id) AS memories, max(r.updated_at) AS last_asserted
FROM relations r
JOIN entities s ON s.user_id = r.user_id AND s.id = r.source_id
JOIN entities t ON t.user_id = r.user_id AND t.id = r.target_id
GROUP BY r.user_id, s.name, r.relation_type, t.name;
COMMENT ON VIEW relation_weights IS
    'Relations by name with their total weight (one per asserting memory, more when re-asserted).';

CREATE VIEW top_entities AS
SELECT user_id, name, entity_type, mentions, degree, rank
FROM (SELECT *, row_number() OVER (PARTITION BY user_id ORDER BY mentions DESC, degree DESC, name) AS rank
      FROM entity_stats) ranked
WHERE rank <= 10;
COMMENT ON VIEW top_entities IS 'The ten most mentioned entities of each user.';

CREATE VIEW rag_documents AS
SELECT d.namespace, d.id, d.source_path, d.title, d.chunk_count, d.token_count,
       d.metadata ->> 'format' AS format, d.created_at, d.updated_at AS last_ingest
FROM documents d;
COMMENT ON VIEW rag_documents IS 'RAG documents with chunk and token counts and their last ingest.';

CREATE VIEW rag_namespaces AS
SELECT namespace, count(*) AS documents, sum(chunk_count) AS chunks, sum(token_count) AS tokens,
       max(updated_at) AS last_ingest
FROM documents
GROUP BY namespace;
COMMENT ON VIEW rag_namespaces IS 'Each RAG namespace with its document, chunk and token totals.';

CREATE TABLE retrieval_log (
    user_id    text NOT NULL,
    id         bigint GENERATED ALWAYS AS IDENTITY,
    logged_at  timestamptz NOT NULL DEFAULT now(),
    kind       text NOT NULL,
    query      text NOT NULL,
    namespace  text,
    results    jsonb NOT NULL DEFAULT '[]'::jsonb,
    latency_ms double precision NOT NULL,
    CONSTRAINT retrieval_log_pkey PRIMARY KEY (user_id, id),
    CONSTRAINT retrieval_log_kind CHECK (kind IN ('memory', 'rag'))
);
CREATE INDEX retrieval_log_user_time ON retrieval_log (user_id, logged_at);
COMMENT ON TABLE retrieval_log IS
    'What was searched, by whom, which memories or chunks came back with which scores, and how long '
    'it took. Written only when PGMEM_RETRIEVAL_LOG=on; rows older than PGMEM_RETRIEVAL_LOG_DAYS are '
    'purged by hello-pgmem maintain. RAG searches are logged with user_id ''rag:<namespace>''.';
COMMENT ON COLUMN retrieval_log.results IS 'The results in rank order: [{"id": ..., "score": ...}, ...].';
