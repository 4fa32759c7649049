-- Revision 0002 undone: the schema as revision 0001 made it before the write path changed. The
-- statistics are kept again by triggers that apply each statement's changes at once, under the
-- user's write lock taken by the first statement; the embedding queue and the staged changes go.
-- The functions below are those of sql/text.sql and sql/sessions.sql at revision 0001, kept here
-- only so that a downgrade can make its triggers again.

DROP TRIGGER IF EXISTS memories_stat_changes_insert ON memories;
DROP TRIGGER IF EXISTS memories_stat_changes_delete ON memories;
DROP TRIGGER IF EXISTS memories_stat_changes_update ON memories;
DROP TRIGGER IF EXISTS memories_stat_changes_truncate ON memories;
DROP TRIGGER IF EXISTS chunks_stat_changes_insert ON chunks;
DROP TRIGGER IF EXISTS chunks_stat_changes_delete ON chunks;
DROP TRIGGER IF EXISTS chunks_stat_changes_update ON chunks;
DROP TRIGGER IF EXISTS chunks_stat_changes_truncate ON chunks;
DROP TRIGGER IF EXISTS memories_embedding_queue_insert ON memories;
DROP TRIGGER IF EXISTS chunks_embedding_queue_insert ON chunks;
DROP TRIGGER IF EXISTS memories_embedding_queue_stale ON memories;
DROP TRIGGER IF EXISTS memories_embedding_queue_update ON memories;
DROP TABLE IF EXISTS memory_embedding_queue, chunk_embedding_queue, memory_stat_changes, chunk_stat_changes,
                     stat_changes_pending;
DROP TRIGGER IF EXISTS memories_totals_truncate ON memories;
DROP TRIGGER IF EXISTS chunks_totals_truncate ON chunks;
DROP TRIGGER IF EXISTS memories_term_counts_truncate ON memories;
DROP TRIGGER IF EXISTS memories_sessions_truncate ON memories;
DROP TRIGGER IF EXISTS memories_session_terms_truncate ON memories;
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['_stage_memory_rows()', '_stage_memory_change()', '_stage_chunk_rows()',
                             '_apply_stat_changes()', '_unstage_truncated()', '_apply_session_changes(bigint)',
                             'queued_embedding_model()', 'embedding_queue_channel()', '_queue_new_rows()',
                             '_drop_stale_vector()', '_requeue_memory()', 'embedding_backlog(text, integer)',
                             'embedding_queue_status()', 'embedding_queue_retry(text)', 'embedding_queue_retry(text, text)',
                             '_check_queue_quota(text, text, integer)', 'erase_statistics()'] LOOP
        EXECUTE format('DROP FUNCTION IF EXISTS %s', f);
    END LOOP;
END $$;
-- the files these functions came from are applied again by the next migration
DELETE FROM sql_applied WHERE file IN ('text.sql', 'sessions.sql', 'statistics.sql', 'embedding_queue.sql',
                                       'search.sql');

CREATE OR REPLACE FUNCTION _lock_writers()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM lock_writers(TG_ARGV[0]::regclass, ARRAY[
        CASE TG_ARGV[0] WHEN 'memory_text_totals' THEN current_memory_user() ELSE current_rag_namespace() END]);
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _lock_writers() IS
    'Internal (statement trigger, before): take the write lock of the transaction''s user or namespace '
    'before the statement touches a row.';

CREATE OR REPLACE FUNCTION _count_terms()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_rows text := CASE TG_OP WHEN 'INSERT' THEN 'new_rows' ELSE 'old_rows' END;
    v_sign text := CASE TG_OP WHEN 'INSERT' THEN '' ELSE '-' END;
BEGIN
    -- A statement trigger cannot name both transition tables for INSERT and DELETE: the one this
    -- operation has. Groups are written in key order, one lock order for every writer.
    EXECUTE format('SELECT lock_writers(%1$L, ARRAY(SELECT %2$I FROM %3$I))', TG_ARGV[0], TG_ARGV[1], v_rows);
    EXECUTE format(
        'INSERT INTO %1$I AS t (%2$I, %3$I, terms)
         SELECT r.%2$I, %5$scount(*), %5$ssum(r.term_count) FROM %4$I r GROUP BY 1 ORDER BY 1
         ON CONFLICT (%2$I) DO UPDATE SET %3$I = t.%3$I + EXCLUDED.%3$I, terms = t.terms + EXCLUDED.terms',
        TG_ARGV[0], TG_ARGV[1], TG_ARGV[2], v_rows, v_sign);
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _count_terms() IS
    'Internal (statement trigger): add the inserted or subtract the deleted rows and terms to the totals.';

CREATE OR REPLACE FUNCTION _count_lexemes()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    -- A statement trigger cannot name both transition tables for INSERT and DELETE: the one this
    -- operation has, each in a statement of its own.
    IF TG_OP = 'INSERT' THEN
        PERFORM lock_writers('memory_text_totals', ARRAY(SELECT user_id FROM new_rows));
        INSERT INTO memory_term_counts AS t (user_id, lexeme, memories)
        SELECT r.user_id, u.lexeme, count(*)
        FROM new_rows r, unnest(r.lexemes) AS u
        WHERE r.forgotten_at IS NULL
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (user_id, lexeme) DO UPDATE SET memories = t.memories + EXCLUDED.memories;
    ELSE
        PERFORM lock_writers('memory_text_totals', ARRAY(SELECT user_id FROM old_rows));
        -- One statement, joins on the key: a count that falls to zero is deleted, the others are
        -- lowered (disjoint rows of the same snapshot).
        WITH d AS MATERIALIZED (
            SELECT r.user_id, u.lexeme, count(*) AS memories
            FROM old_rows r, unnest(r.lexemes) AS u
            WHERE r.forgotten_at IS NULL
            GROUP BY 1, 2
        ), gone AS (
            DELETE FROM memory_term_counts t USING d
            WHERE t.user_id = d.user_id AND t.lexeme = d.lexeme AND t.memories <= d.memories
        )
        UPDATE memory_term_counts t SET memories = t.memories - d.memories
        FROM d
        WHERE t.user_id = d.user_id AND t.lexeme = d.lexeme AND t.memories > d.memories;
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _count_lexemes() IS
    'Internal (statement trigger): count the terms of inserted live memories, or uncount deleted ones.';

CREATE OR REPLACE FUNCTION _change_sessions(p_users text[], p_sessions text[], p_models text[],
                                            p_memories integer[], p_terms bigint[], p_sums vector[],
                                            p_sign integer)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    -- One entry per user, session and model: how many memories, their terms and the sum of their
    -- vectors. p_sign 1 adds them to their sessions, -1 takes them out; rows are written in key
    -- order (one lock order for every writer).
    WITH changed AS (
        INSERT INTO memory_sessions AS s (user_id, session_id, memories, terms)
        SELECT r.user_id, r.session_id, p_sign * sum(r.memories), p_sign * sum(r.terms)
        FROM unnest(p_users, p_sessions, p_memories, p_terms) AS r(user_id, session_id, memories, terms)
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (user_id, session_id) DO UPDATE
        SET memories = s.memories + EXCLUDED.memories, terms = s.terms + EXCLUDED.terms
        RETURNING s.user_id, xmax = 0 AS created, s.memories
    ), counted AS (
        SELECT c.user_id,
               count(*) FILTER (WHERE c.created AND c.memories > 0)
               - count(*) FILTER (WHERE NOT c.created AND c.memories <= 0) AS sessions
        FROM changed c GROUP BY 1
    )
    INSERT INTO memory_text_totals AS t (user_id, sessions, session_terms)
    SELECT c.user_id, c.sessions, p_sign * sum(r.terms)
    FROM counted c JOIN unnest(p_users, p_terms) AS r(user_id, terms) ON r.user_id = c.user_id
    GROUP BY c.user_id, c.sessions ORDER BY 1
    ON CONFLICT (user_id) DO UPDATE
    SET sessions = t.sessions + EXCLUDED.sessions, session_terms = t.session_terms + EXCLUDED.session_terms;

    IF p_sign < 0 THEN
        DELETE FROM memory_sessions s
        USING (SELECT DISTINCT r.user_id, r.session_id FROM unnest(p_users, p_sessions) AS r(user_id, session_id)) AS r
        WHERE s.user_id = r.user_id AND s.session_id = r.session_id AND s.memories <= 0;
    END IF;

    -- The sum of the session's vectors of one model: memories of that model move it; the first
    -- memory of another model (a re-embedding) makes it again from the session's memories.
    UPDATE memory_sessions s
    SET embedding_model = c.model,
        embedding_sum = CASE
            WHEN s.embedding_model = c.model AND p_sign > 0 THEN s.embedding_sum + c.total
            WHEN s.embedding_model = c.model THEN s.embedding_sum - c.total
            ELSE (SELECT sum(m.embedding) FROM memories m
                  WHERE m.user_id = s.user_id AND m.session_id = s.session_id AND m.embedding_model = c.model
                    AND m.forgotten_at IS NULL AND m.memory_type <> 'perceptual') END
    FROM unnest(p_users, p_sessions, p_models, p_sums) AS c(user_id, session_id, model, total)
    WHERE c.total IS NOT NULL AND s.user_id = c.user_id AND s.session_id = c.session_id
      AND (p_sign > 0 OR s.embedding_model = c.model);
END $$;
COMMENT ON FUNCTION _change_sessions(text[], text[], text[], integer[], bigint[], vector[], integer) IS
    'Internal: add (p_sign 1) or take out (-1) memories of their sessions, given per user, session and '
    'model (how many, their terms, their summed vector): memory_sessions and the user''s session totals.';

CREATE OR REPLACE FUNCTION _session_moves(p_rows text, p_sign integer)
RETURNS text[]
LANGUAGE sql IMMUTABLE
RETURN ARRAY[
    format('SELECT _change_sessions(array_agg(g.user_id), array_agg(g.session_id), array_agg(g.model),
                                    array_agg(g.memories), array_agg(g.terms), array_agg(g.total), %2$s)
            FROM (SELECT r.user_id, r.session_id, r.embedding_model AS model, count(*)::integer AS memories,
                         sum(r.term_count)::bigint AS terms,
                         sum(r.embedding) FILTER (WHERE r.memory_type <> ''perceptual'') AS total
                  FROM %1$s r WHERE r.forgotten_at IS NULL AND r.session_id IS NOT NULL
                  GROUP BY 1, 2, 3) AS g
            HAVING count(*) > 0', p_rows, p_sign),
    format('MERGE INTO session_terms AS t
            USING (SELECT r.user_id, u.lexeme, r.session_id,
                          %2$s * sum(coalesce(array_length(u.positions, 1), 1))::integer AS tf
                   FROM %1$s r, unnest(r.lexemes) AS u WHERE r.forgotten_at IS NULL AND r.session_id IS NOT NULL
                   GROUP BY 1, 2, 3) AS c
            ON t.user_id = c.user_id AND t.lexeme = c.lexeme AND t.session_id = c.session_id
            WHEN MATCHED AND t.tf + c.tf <= 0 THEN DELETE
            WHEN MATCHED THEN UPDATE SET tf = t.tf + c.tf
            WHEN NOT MATCHED AND c.tf > 0 THEN
                INSERT (user_id, lexeme, session_id, tf) VALUES (c.user_id, c.lexeme, c.session_id, c.tf)',
           p_rows, p_sign)];
COMMENT ON FUNCTION _session_moves(text, integer) IS
    'Internal: the statements that add (p_sign 1) or take out (-1) the live memories of the relation '
    'p_rows to their sessions; run by the sessions'' triggers, which hold the users'' write locks.';

CREATE OR REPLACE FUNCTION _count_sessions()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    -- A statement trigger has the transition table of its operation alone.
    v_rows text := CASE TG_OP WHEN 'INSERT' THEN 'new_rows' ELSE 'old_rows' END;
    v_statement text;
BEGIN
    EXECUTE format('SELECT lock_writers(''memory_text_totals'', ARRAY(SELECT user_id FROM %I))', v_rows);
    FOREACH v_statement IN ARRAY _session_moves(v_rows, CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END) LOOP
        EXECUTE v_statement;
    END LOOP;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _count_sessions() IS
    'Internal (statement trigger): add inserted live memories to their sessions, or take deleted ones out.';

CREATE OR REPLACE FUNCTION _count_sessions_row()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    -- The memory as it was leaves its session, the memory as it is joins one: a change of text,
    -- of session, of vector, or being forgotten or restored. A forgotten memory, or one in no
    -- session, is in none: nothing to move.
    v_leaves boolean := OLD.forgotten_at IS NULL AND OLD.session_id IS NOT NULL;
    v_joins boolean := NEW.forgotten_at IS NULL AND NEW.session_id IS NOT NULL;
    v_statement text;
BEGIN
    IF v_leaves OR v_joins THEN
        PERFORM lock_writers('memory_text_totals', ARRAY[OLD.user_id, NEW.user_id]);
    END IF;
    IF v_leaves THEN
        FOREACH v_statement IN ARRAY _session_moves('(SELECT ($1).*)', -1) LOOP
            EXECUTE v_statement USING OLD;
        END LOOP;
    END IF;
    IF v_joins THEN
        FOREACH v_statement IN ARRAY _session_moves('(SELECT ($1).*)', 1) LOOP
            EXECUTE v_statement USING NEW;
        END LOOP;
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _count_sessions_row() IS
    'Internal (row trigger): move a memory between sessions as it changes (text, session, vector, '
    'forgotten or restored).';

-- For memories (per user) and chunks (per namespace) alike:
-- * one user's (one namespace's) writes wait for each other from the first (sql/text.sql,
--   lock_writers);
-- * BM25's statistics, rows and terms per user and namespace: inserts and deletes counted per
--   statement, a change of text per row.
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT * FROM (VALUES ('memories', 'memory_text_totals', 'user_id'),
                                   ('chunks', 'chunk_text_totals', 'namespace')) AS v(tab, totals, key) LOOP
        EXECUTE format('CREATE TRIGGER %1$I BEFORE INSERT OR UPDATE OR DELETE ON %2$I '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _lock_writers(%3$L)',
                       t.tab || '_lock_writers', t.tab, t.totals);
        EXECUTE format('CREATE TRIGGER %1$I AFTER INSERT ON %2$I REFERENCING NEW TABLE AS new_rows '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _count_terms(%3$L, %4$L, %2$L)',
                       t.tab || '_totals_insert', t.tab, t.totals, t.key);
        EXECUTE format('CREATE TRIGGER %1$I AFTER DELETE ON %2$I REFERENCING OLD TABLE AS old_rows '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _count_terms(%3$L, %4$L, %2$L)',
                       t.tab || '_totals_delete', t.tab, t.totals, t.key);
        EXECUTE format('CREATE TRIGGER %1$I AFTER UPDATE OF content, text_config ON %2$I FOR EACH ROW '
                       'WHEN (OLD.term_count IS DISTINCT FROM NEW.term_count) '
                       'EXECUTE FUNCTION _recount_terms(%3$L, %4$L)',
                       t.tab || '_totals_update', t.tab, t.totals, t.key);
        EXECUTE format('CREATE TRIGGER %1$I AFTER TRUNCATE ON %2$I '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _clear_terms(%3$L)',
                       t.tab || '_totals_truncate', t.tab, t.totals);
    END LOOP;
END $$;
-- Per user, the live memories holding each lexeme.
CREATE TRIGGER memories_term_counts_insert AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _count_lexemes();
CREATE TRIGGER memories_term_counts_delete AFTER DELETE ON memories REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _count_lexemes();
CREATE TRIGGER memories_term_counts_update AFTER UPDATE OF content, text_config, forgotten_at ON memories
    FOR EACH ROW WHEN (OLD.lexemes IS DISTINCT FROM NEW.lexemes
                       OR (OLD.forgotten_at IS NULL) <> (NEW.forgotten_at IS NULL))
    EXECUTE FUNCTION _count_lexemes_row();
CREATE TRIGGER memories_term_counts_truncate AFTER TRUNCATE ON memories
    FOR EACH STATEMENT EXECUTE FUNCTION _clear_terms('memory_term_counts');

-- Sessions as documents (sql/sessions.sql): inserts and deletes per statement, changes per row.
CREATE TRIGGER memories_sessions_insert AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _count_sessions();
CREATE TRIGGER memories_sessions_delete AFTER DELETE ON memories REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _count_sessions();
CREATE TRIGGER memories_sessions_update
    AFTER UPDATE OF content, text_config, forgotten_at, session_id, embedding, embedding_model ON memories
    FOR EACH ROW WHEN (OLD.lexemes IS DISTINCT FROM NEW.lexemes
                       OR (OLD.forgotten_at IS NULL) <> (NEW.forgotten_at IS NULL)
                       OR OLD.session_id IS DISTINCT FROM NEW.session_id
                       OR OLD.embedding_model IS DISTINCT FROM NEW.embedding_model
                       OR OLD.embedding::text IS DISTINCT FROM NEW.embedding::text)  -- a cast, not an
                                                                                     -- operator a restore's
                                                                                     -- search_path lacks
    EXECUTE FUNCTION _count_sessions_row();
CREATE TRIGGER memories_sessions_truncate AFTER TRUNCATE ON memories
    FOR EACH STATEMENT EXECUTE FUNCTION _clear_terms('memory_sessions');
CREATE TRIGGER memories_session_terms_truncate AFTER TRUNCATE ON memories
    FOR EACH STATEMENT EXECUTE FUNCTION _clear_terms('session_terms');

