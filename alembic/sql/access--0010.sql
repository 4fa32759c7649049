-- Revision 0010: a search no longer writes to memories. Each search appends the memories it
-- returned to memory_accesses, an UNLOGGED log (no WAL, no index on the memories, no row lock on
-- them); fold_accesses moves the log into memories.access_count and last_accessed_at. maintain
-- folds every user's accesses, apply_decay folds its user's before it ranks, and the views that
-- show accesses add what is not folded yet. A crash of the server empties an UNLOGGED table: what
-- it can lose is the accesses not yet folded, never a memory.

CREATE UNLOGGED TABLE memory_accesses (
    user_id     text NOT NULL,
    memory_id   uuid NOT NULL,
    accessed_at timestamptz NOT NULL
);
CREATE INDEX memory_accesses_user ON memory_accesses (user_id);
COMMENT ON TABLE memory_accesses IS
    'Memories returned by searches and not yet folded into memories.access_count (fold_accesses); '
    'UNLOGGED: a crash loses these counts, never a memory.';

ALTER TABLE memory_accesses ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_accesses FORCE ROW LEVEL SECURITY;
CREATE POLICY user_rows ON memory_accesses USING (user_id = (SELECT current_memory_user()))
    WITH CHECK (user_id = (SELECT current_memory_user()));
CREATE POLICY all_rows ON memory_accesses TO CURRENT_USER USING ((SELECT all_rows_requested()))
    WITH CHECK ((SELECT all_rows_requested()));

CREATE VIEW pending_accesses WITH (security_invoker = true) AS
SELECT user_id, memory_id, count(*) AS accesses, max(accessed_at) AS last_accessed_at
FROM memory_accesses
GROUP BY user_id, memory_id;
COMMENT ON VIEW pending_accesses IS 'Per memory: the accesses the log holds that are not folded yet.';

CREATE FUNCTION fold_accesses(p_user_id text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    v_folded bigint;
BEGIN
    WITH taken AS (
        DELETE FROM memory_accesses a
        WHERE p_user_id IS NULL OR a.user_id = p_user_id
        RETURNING a.user_id, a.memory_id, a.accessed_at
    ), counted AS (
        SELECT t.user_id, t.memory_id, count(*) AS accesses, max(t.accessed_at) AS last_accessed_at
        FROM taken t GROUP BY 1, 2
    ), folded AS (
        UPDATE memories m
        SET access_count = m.access_count + c.accesses,
            last_accessed_at = greatest(m.last_accessed_at, c.last_accessed_at)
        FROM counted c
        WHERE m.user_id = c.user_id AND m.id = c.memory_id
        RETURNING 1
    )
    SELECT coalesce(sum(c.accesses), 0) INTO v_folded FROM counted c;
    RETURN v_folded;
END $$;
COMMENT ON FUNCTION fold_accesses(text) IS
    'Move the access log of one user (every user the caller may see when NULL) into '
    'memories.access_count and last_accessed_at; returns how many accesses were folded. Accesses '
    'of memories deleted since are dropped.';

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
    PERFORM fold_accesses(p_user_id);  -- retention reads the access counts
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

-- The views that show accesses count the log too, so they never lag behind the searches.
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

CREATE OR REPLACE VIEW stale_memories WITH (security_invoker = true) AS
SELECT m.user_id, m.id, m.memory_type, m.content, m.importance, m.created_at, m.access_count,
       m.last_accessed_at, retention_score(m.importance, m.last_accessed_at, m.access_count, now()) AS retention
FROM memories m
WHERE m.forgotten_at IS NULL AND m.last_accessed_at IS NULL AND m.created_at < now() - interval '90 days'
  AND m.importance < 0.3
  AND NOT EXISTS (SELECT 1 FROM memory_accesses a WHERE a.user_id = m.user_id AND a.memory_id = m.id);

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
