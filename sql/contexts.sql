-- Each live memory's context window as one text (memory_contexts): its lexemes and those of the
-- live memories around it in its session (ranking_weight('window') on each side, by (created_at,
-- seq)), with how often the window holds each, and the window's length. A write changes them in
-- its own transaction: at its commit, after the user's write lock (sql/statistics.sql), the windows
-- around every place the transaction changed are made again. The hybrid search finds its
-- candidates by one scan of them and reads each window's BM25 from the row it finds
-- (sql/search.sql).
-- Applied by every migration in which this file changed (sql/README.md); tests/test_sql_live.py
-- holds it equal to a migrated database.

CREATE OR REPLACE FUNCTION memories_around(p_user_id text, p_session_id text, p_created_at timestamptz,
                                           p_seq bigint)
RETURNS TABLE (id uuid, lexemes tsvector, term_count integer)
LANGUAGE sql STABLE  -- inlined where it is called: two index scans of two rows each
AS $$
    (SELECT q.id, q.lexemes, q.term_count FROM memories q
     WHERE q.user_id = p_user_id AND q.session_id = p_session_id AND q.forgotten_at IS NULL
       AND (q.created_at, q.seq) < (p_created_at, p_seq)
     ORDER BY q.created_at DESC, q.seq DESC LIMIT ranking_weight('window')::integer)
    UNION ALL
    (SELECT q.id, q.lexemes, q.term_count FROM memories q
     WHERE q.user_id = p_user_id AND q.session_id = p_session_id AND q.forgotten_at IS NULL
       AND (q.created_at, q.seq) > (p_created_at, p_seq)
     ORDER BY q.created_at, q.seq LIMIT ranking_weight('window')::integer)
$$;
COMMENT ON FUNCTION memories_around(text, text, timestamptz, bigint) IS
    'The live memories around a place in a session (its created_at and seq): ranking_weight(''window'') '
    'before it and as many after it. Every one of them has a memory at that place in its context window.';

CREATE OR REPLACE FUNCTION window_lexemes(p_members tsvector[])
RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT coalesce(string_agg(format('''%s'':%s', replace(replace(t.lexeme, '\', '\\'), '''', ''''''),
                                      (SELECT string_agg(p::text, ',') FROM generate_series(1, least(t.tf, 256)) AS p)),
                               ' ' ORDER BY t.lexeme), '')::tsvector
    FROM (SELECT u.lexeme, sum(coalesce(array_length(u.positions, 1), 1))::integer AS tf
          FROM unnest(p_members) AS m(lexemes), unnest(m.lexemes) AS u
          GROUP BY u.lexeme) AS t
$$;
COMMENT ON FUNCTION window_lexemes(tsvector[]) IS
    'The lexemes of several texts as one: each lexeme once, with as many positions (1, 2, …) as the texts '
    'hold it in all (at most 256, tsvector''s limit), so that a lexeme''s frequency in the whole is the '
    'length of its positions, whatever the texts'' lengths.';

CREATE OR REPLACE FUNCTION memory_windows(p_user_id text, p_ids uuid[])
RETURNS TABLE (memory_id uuid, memory_type text, lexemes tsvector, length integer, seq bigint)
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT m.id, m.memory_type, window_lexemes(m.lexemes || coalesce(a.lexemes, '{}')),
           m.term_count + coalesce(a.length, 0), m.seq
    FROM (SELECT DISTINCT x.id FROM unnest(p_ids) AS x(id)) AS t
    CROSS JOIN LATERAL (SELECT * FROM memories x
                        WHERE x.user_id = p_user_id AND x.id = t.id AND x.forgotten_at IS NULL OFFSET 0) AS m
    LEFT JOIN LATERAL (SELECT array_agg(n.lexemes) AS lexemes, sum(n.term_count)::integer AS length
                       FROM memories_around(p_user_id, m.session_id, m.created_at, m.seq) AS n) AS a
        ON m.session_id IS NOT NULL
$$;
COMMENT ON FUNCTION memory_windows(text, uuid[]) IS
    'The context window of each live memory of p_ids: itself and the memories around it in its session '
    '(memories_around; itself alone without a session) as one text (window_lexemes), and its length in '
    'terms. memory_contexts holds exactly these rows for every live memory.';

CREATE OR REPLACE FUNCTION _store_contexts(p_user_id text, p_ids uuid[])
RETURNS integer
LANGUAGE sql
SET search_path FROM CURRENT
AS $$
    -- The windows of p_ids made again from the rows as they are: a window that is unchanged is not
    -- written again, and a memory no longer live loses its row.
    WITH windows AS MATERIALIZED (
        SELECT w.* FROM memory_windows(p_user_id, p_ids) AS w
    ), gone AS (
        DELETE FROM memory_contexts x
        WHERE x.user_id = p_user_id AND x.memory_id = ANY (p_ids)
          AND NOT EXISTS (SELECT 1 FROM windows w WHERE w.memory_id = x.memory_id)
    ), made AS (
        INSERT INTO memory_contexts AS x (user_id, memory_id, memory_type, lexemes, length)
        SELECT p_user_id, w.memory_id, w.memory_type, w.lexemes, w.length FROM windows w ORDER BY w.seq
        ON CONFLICT (user_id, memory_id) DO UPDATE
        SET memory_type = EXCLUDED.memory_type, lexemes = EXCLUDED.lexemes, length = EXCLUDED.length
        WHERE (x.memory_type, x.lexemes, x.length)
              IS DISTINCT FROM (EXCLUDED.memory_type, EXCLUDED.lexemes, EXCLUDED.length)
    )
    SELECT count(*)::integer FROM windows
$$;
COMMENT ON FUNCTION _store_contexts(text, uuid[]) IS
    'Internal: make memory_contexts hold the windows of the memories p_ids of a user as their rows now '
    'are (memory_windows): written where changed, deleted where the memory is not live; how many are live.';

CREATE OR REPLACE FUNCTION _apply_context_changes(p_xact bigint)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    -- Every memory whose window may have changed: each staged memory, and the memories around
    -- each place a staged memory was or is in its session.
    PERFORM _store_contexts(t.user_id, array_agg(DISTINCT t.id))
    FROM (SELECT c.user_id, c.memory_id AS id
          FROM memory_stat_changes c WHERE c.xact = p_xact
          UNION ALL
          SELECT c.user_id, n.id
          FROM (SELECT DISTINCT x.user_id, x.session_id, x.created_at, x.seq
                FROM memory_stat_changes x WHERE x.xact = p_xact AND x.session_id IS NOT NULL) AS c
          CROSS JOIN LATERAL memories_around(c.user_id, c.session_id, c.created_at, c.seq) AS n) AS t
    GROUP BY t.user_id
    ORDER BY t.user_id;
END $$;
COMMENT ON FUNCTION _apply_context_changes(bigint) IS
    'Internal: make again, at the commit of the transaction p_xact, the context windows of the memories '
    'it staged and of those around each place they were and are (sql/statistics.sql calls it).';

CREATE OR REPLACE FUNCTION _refresh_contexts_row()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_user text := CASE TG_OP WHEN 'DELETE' THEN OLD.user_id ELSE NEW.user_id END;
BEGIN
    -- A Citus cluster's row trigger (sql/citus/distribute.sql), where no step at commit reaches the
    -- shards: the windows around the row as it was and as it is, at once, under the user's lock.
    PERFORM lock_writers('memory_text_totals', ARRAY[v_user]);
    PERFORM _store_contexts(v_user, ARRAY(
        SELECT NEW.id WHERE TG_OP <> 'DELETE'
        UNION SELECT OLD.id WHERE TG_OP <> 'INSERT'
        UNION SELECT n.id FROM memories_around(v_user, OLD.session_id, OLD.created_at, OLD.seq) AS n
              WHERE TG_OP <> 'INSERT' AND OLD.session_id IS NOT NULL
        UNION SELECT n.id FROM memories_around(v_user, NEW.session_id, NEW.created_at, NEW.seq) AS n
              WHERE TG_OP <> 'DELETE' AND NEW.session_id IS NOT NULL));
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _refresh_contexts_row() IS
    'Internal (row trigger, Citus): make again the context windows around a memory as it was and as it is.';

CREATE OR REPLACE FUNCTION fill_memory_contexts(p_user_id text, p_after uuid, p_batch integer)
RETURNS TABLE (filled integer, last_id uuid, done boolean)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_live integer;
BEGIN
    PERFORM _require_text(p_user_id, 'user_id'), _require_range(p_batch, 'batch', 1, 100000);
    PERFORM lock_writers('memory_text_totals', ARRAY[p_user_id]);
    SELECT count(*)::integer, (array_agg(b.id ORDER BY b.id DESC))[1],
           _store_contexts(p_user_id, array_agg(b.id))
    INTO filled, last_id, v_live
    FROM (SELECT m.id FROM memories m
          WHERE m.user_id = p_user_id AND m.forgotten_at IS NULL AND (p_after IS NULL OR m.id > p_after)
          ORDER BY m.id LIMIT p_batch) AS b;
    done := filled < p_batch;
    IF done THEN  -- the rows of memories that are no longer live go, and the user is ready
        DELETE FROM memory_contexts x
        WHERE x.user_id = p_user_id
          AND NOT EXISTS (SELECT 1 FROM memories m
                          WHERE m.user_id = x.user_id AND m.id = x.memory_id AND m.forgotten_at IS NULL);
        UPDATE memory_text_totals t SET contexts_ready = true WHERE t.user_id = p_user_id;
    END IF;
    RETURN NEXT;
END $$;
COMMENT ON FUNCTION fill_memory_contexts(text, uuid, integer) IS
    'A migration''s fill of memory_contexts for a user who has live memories from before them: the windows '
    'of the next p_batch live memories by id after p_after, under the user''s write lock; how many, the '
    'last id, and done when none is left, when the user''s stale rows are gone and contexts_ready is set. '
    'Rerun from the start or from any id, it makes the same rows.';
