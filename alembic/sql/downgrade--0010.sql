-- Undo revision 0010: searches write access counts to memories again (the library of that
-- revision does); the log, its fold and the views' pending counts go. Accesses not folded yet are
-- folded first, so no count is lost.
SELECT fold_accesses();

CREATE OR REPLACE FUNCTION apply_decay(p_user_id text, p_max_memories integer, p_now timestamptz DEFAULT now())
RETURNS integer
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    v_evicted integer;
BEGIN
    IF p_user_id IS NULL OR btrim(p_user_id) = '' THEN
        RAISE EXCEPTION 'user_id must be a non-empty string' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_max_memories IS NULL OR p_max_memories < 0 THEN
        RAISE EXCEPTION 'max_memories must be zero or more, got %', coalesce(p_max_memories::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    WITH ranked AS (
        SELECT m.id,
               row_number() OVER (ORDER BY retention_score(m.importance, m.last_accessed_at, m.access_count, p_now) DESC,
                                           m.created_at DESC, m.id) AS keep_rank
        FROM memories m
        WHERE m.user_id = p_user_id AND m.forgotten_at IS NULL
    )
    UPDATE memories m SET forgotten_at = p_now
    FROM ranked r
    WHERE m.user_id = p_user_id AND m.id = r.id AND r.keep_rank > p_max_memories;
    GET DIAGNOSTICS v_evicted = ROW_COUNT;
    RETURN v_evicted;
END $$;

CREATE OR REPLACE VIEW memory_stats WITH (security_invoker = true) AS
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

CREATE OR REPLACE VIEW stale_memories WITH (security_invoker = true) AS
SELECT user_id, id, memory_type, content, importance, created_at, access_count, last_accessed_at,
       retention_score(importance, last_accessed_at, access_count, now()) AS retention
FROM memories
WHERE forgotten_at IS NULL AND last_accessed_at IS NULL AND created_at < now() - interval '90 days'
  AND importance < 0.3;

CREATE OR REPLACE VIEW decay_candidates WITH (security_invoker = true) AS
SELECT user_id, id, memory_type, content, importance, access_count, last_accessed_at,
       retention_score(importance, last_accessed_at, access_count, now()) AS retention,
       row_number() OVER (PARTITION BY user_id
                          ORDER BY retention_score(importance, last_accessed_at, access_count, now()),
                                   created_at, id) AS eviction_rank
FROM memories
WHERE forgotten_at IS NULL;

DROP FUNCTION fold_accesses(text);
DROP VIEW pending_accesses;
DROP TABLE memory_accesses;
