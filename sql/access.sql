-- Accesses of memories: the access log folded into the counters, and decay applied.
-- Applied by every migration in which this file changed (sql/README.md); tests/test_sql_live.py
-- holds it equal to a migrated database.

CREATE OR REPLACE FUNCTION fold_accesses(p_user_id text DEFAULT NULL)
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
    PERFORM _require_text(p_user_id, 'user_id');
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
COMMENT ON FUNCTION apply_decay(text, integer, timestamptz) IS
    'When a user holds more than p_max_memories live long-term memories, forget (set forgotten_at on) '
    'those with the lowest retention_score; one set-based statement; returns how many.';
