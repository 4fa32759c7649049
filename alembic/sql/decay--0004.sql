-- Revision 0004: retention scoring and eviction for the long-term memory loop.

CREATE FUNCTION retention_score(importance double precision, last_accessed_at timestamptz,
                                access_count integer, p_now timestamptz)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN _require_range(importance, 'importance', 0, 1) * 0.4
     + (CASE WHEN last_accessed_at IS NULL THEN 0.5
             ELSE greatest(0, 1 - extract(epoch FROM p_now - last_accessed_at)::float8 / 86400 / 365) END) * 0.4
     + least(1, greatest(0, coalesce(access_count, 0)) / 10.0) * 0.2;
COMMENT ON FUNCTION retention_score(double precision, timestamptz, integer, timestamptz) IS
    'How much a memory deserves to stay: importance * 0.4 + time_decay * 0.4 + frequency_bonus * 0.2, '
    'time_decay = max(0, 1 - days since last access / 365) (0.5 if never accessed), '
    'frequency_bonus = min(1, access_count / 10).';

CREATE FUNCTION apply_decay(p_user_id text, p_max_memories integer, p_now timestamptz DEFAULT now())
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
COMMENT ON FUNCTION apply_decay(text, integer, timestamptz) IS
    'When a user holds more than p_max_memories live long-term memories, forget (set forgotten_at on) '
    'those with the lowest retention_score; one set-based statement; returns how many.';
