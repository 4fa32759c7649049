-- The search statistics of memories and chunks, kept by triggers in one step per transaction.
-- Applied by every migration in which this file changed (sql/README.md); tests/test_sql_live.py
-- holds it equal to a migrated database.
--
-- Every statement on memories or chunks stages the rows it changed, signed (+1 as they are now,
-- -1 as they were), in memory_stat_changes or chunk_stat_changes; the transaction's first staged
-- statement also marks it in stat_changes_pending, whose deferred trigger applies everything the
-- transaction staged when it commits: the users' (namespaces') write locks in one order, then the
-- totals, the term counts, the sessions (sql/sessions.sql) and the memories' context windows
-- (sql/contexts.sql), each from the net change of the whole transaction. So a batch of any size holds its user's lock for that last step alone, and
-- the statistics stay exact: they change with the rows, in the same commit. A later statement of
-- the transaction after SET CONSTRAINTS ... IMMEDIATE is staged and applied again at commit.

CREATE OR REPLACE FUNCTION _stage_memory_rows()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_xact bigint := pg_current_xact_id()::text::bigint;
BEGIN
    -- A statement trigger has the transition table of its operation alone: the one this one has.
    IF TG_OP = 'INSERT' THEN
        INSERT INTO memory_stat_changes (xact, user_id, memory_id, sign, live, session_id, created_at, seq,
                                         memory_type, term_count, lexemes, embedding, embedding_model)
        SELECT v_xact, r.user_id, r.id, 1, r.forgotten_at IS NULL, r.session_id, r.created_at, r.seq,
               r.memory_type, r.term_count, r.lexemes, r.embedding, r.embedding_model
        FROM new_rows r;
    ELSE
        INSERT INTO memory_stat_changes (xact, user_id, memory_id, sign, live, session_id, created_at, seq,
                                         memory_type, term_count, lexemes, embedding, embedding_model)
        SELECT v_xact, r.user_id, r.id, -1, r.forgotten_at IS NULL, r.session_id, r.created_at, r.seq,
               r.memory_type, r.term_count, r.lexemes, r.embedding, r.embedding_model
        FROM old_rows r;
    END IF;
    IF FOUND THEN
        INSERT INTO stat_changes_pending (xact) VALUES (v_xact) ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _stage_memory_rows() IS
    'Internal (statement trigger): stage the memories a statement inserted (+1) or deleted (-1) for '
    'the statistics, applied at commit.';

CREATE OR REPLACE FUNCTION _stage_memory_change()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_xact bigint := pg_current_xact_id()::text::bigint;
BEGIN
    INSERT INTO memory_stat_changes (xact, user_id, memory_id, sign, live, session_id, created_at, seq, memory_type,
                                     term_count, lexemes, embedding, embedding_model)
    VALUES (v_xact, OLD.user_id, OLD.id, -1, OLD.forgotten_at IS NULL, OLD.session_id, OLD.created_at, OLD.seq,
            OLD.memory_type, OLD.term_count, OLD.lexemes, OLD.embedding, OLD.embedding_model),
           (v_xact, NEW.user_id, NEW.id, 1, NEW.forgotten_at IS NULL, NEW.session_id, NEW.created_at, NEW.seq,
            NEW.memory_type, NEW.term_count, NEW.lexemes, NEW.embedding, NEW.embedding_model);
    INSERT INTO stat_changes_pending (xact) VALUES (v_xact) ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _stage_memory_change() IS
    'Internal (row trigger): stage a memory whose text, session, time, type, vector or being forgotten '
    'changed, as it was (-1) and as it is (+1).';

CREATE OR REPLACE FUNCTION _stage_chunk_rows()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_xact bigint := pg_current_xact_id()::text::bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO chunk_stat_changes (xact, namespace, sign, term_count)
        SELECT v_xact, r.namespace, 1, r.term_count FROM new_rows r;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO chunk_stat_changes (xact, namespace, sign, term_count)
        SELECT v_xact, r.namespace, -1, r.term_count FROM old_rows r;
    ELSE  -- a row trigger: a chunk's text changed
        INSERT INTO chunk_stat_changes (xact, namespace, sign, term_count)
        VALUES (v_xact, OLD.namespace, -1, OLD.term_count), (v_xact, NEW.namespace, 1, NEW.term_count);
    END IF;
    IF FOUND THEN
        INSERT INTO stat_changes_pending (xact) VALUES (v_xact) ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _stage_chunk_rows() IS
    'Internal (statement trigger for inserts and deletes, row trigger for a new text): stage the '
    'chunks a statement changed for the statistics, applied at commit.';

CREATE OR REPLACE FUNCTION _apply_stat_changes()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_xact bigint := NEW.xact;
BEGIN
    -- the writers' locks of every user and namespace the transaction changed, in one order
    PERFORM lock_writers('memory_text_totals',
                         ARRAY(SELECT DISTINCT c.user_id FROM memory_stat_changes c WHERE c.xact = v_xact));
    PERFORM lock_writers('chunk_text_totals',
                         ARRAY(SELECT DISTINCT c.namespace FROM chunk_stat_changes c WHERE c.xact = v_xact));

    -- live rows and their terms (BM25's number of documents and their average length: what a
    -- search can return, so that earlier versions and forgotten memories weigh nothing)
    INSERT INTO memory_text_totals AS t (user_id, memories, terms)
    SELECT c.user_id, sum(c.sign), sum(c.sign * c.term_count)
    FROM memory_stat_changes c WHERE c.xact = v_xact AND c.live
    GROUP BY 1 HAVING sum(c.sign) <> 0 OR sum(c.sign * c.term_count) <> 0 ORDER BY 1
    ON CONFLICT (user_id) DO UPDATE SET memories = t.memories + EXCLUDED.memories, terms = t.terms + EXCLUDED.terms;
    INSERT INTO chunk_text_totals AS t (namespace, chunks, terms)
    SELECT c.namespace, sum(c.sign), sum(c.sign * c.term_count)
    FROM chunk_stat_changes c WHERE c.xact = v_xact
    GROUP BY 1 HAVING sum(c.sign) <> 0 OR sum(c.sign * c.term_count) <> 0 ORDER BY 1
    ON CONFLICT (namespace) DO UPDATE SET chunks = t.chunks + EXCLUDED.chunks, terms = t.terms + EXCLUDED.terms;

    -- the live memories holding each lexeme (BM25's document frequencies); a count that reaches
    -- zero is deleted
    MERGE INTO memory_term_counts AS t
    USING (SELECT c.user_id, u.lexeme, sum(c.sign)::integer AS memories
           FROM memory_stat_changes c, unnest(c.lexemes) AS u
           WHERE c.xact = v_xact AND c.live
           GROUP BY 1, 2 HAVING sum(c.sign) <> 0) AS d
    ON t.user_id = d.user_id AND t.lexeme = d.lexeme
    WHEN MATCHED AND t.memories + d.memories <= 0 THEN DELETE
    WHEN MATCHED THEN UPDATE SET memories = t.memories + d.memories
    WHEN NOT MATCHED AND d.memories > 0 THEN
        INSERT (user_id, lexeme, memories) VALUES (d.user_id, d.lexeme, d.memories);

    PERFORM _apply_session_changes(v_xact);  -- sql/sessions.sql
    IF EXISTS (SELECT 1 FROM memory_stat_changes c WHERE c.xact = v_xact) THEN
        PERFORM _apply_context_changes(v_xact);  -- sql/contexts.sql
    END IF;

    DELETE FROM memory_stat_changes c WHERE c.xact = v_xact;
    DELETE FROM chunk_stat_changes c WHERE c.xact = v_xact;
    DELETE FROM stat_changes_pending p WHERE p.xact = v_xact;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _apply_stat_changes() IS
    'Internal (deferred constraint trigger, at commit): apply what the transaction staged to the '
    'totals, the term counts, the sessions and the context windows, under the write locks of the users '
    'and namespaces it changed.';

CREATE OR REPLACE FUNCTION _unstage_truncated()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_xact bigint := pg_current_xact_id()::text::bigint;
BEGIN
    -- what the transaction staged before the truncate counts no more: the statistics are emptied
    IF TG_TABLE_NAME = 'memories' THEN
        DELETE FROM memory_stat_changes c WHERE c.xact = v_xact;
    ELSE
        DELETE FROM chunk_stat_changes c WHERE c.xact = v_xact;
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _unstage_truncated() IS
    'Internal (truncate trigger): drop the changes the transaction staged for the truncated table.';

CREATE OR REPLACE FUNCTION erase_statistics()
RETURNS TABLE (memory_totals bigint, chunk_totals bigint)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    -- the transaction's staged changes first (its deletes bring the counts to zero), then the rows
    -- that would still name the user and its namespace
    SET CONSTRAINTS stat_changes_apply IMMEDIATE;
    DELETE FROM memory_text_totals t WHERE t.user_id = current_memory_user();
    GET DIAGNOSTICS memory_totals = ROW_COUNT;
    DELETE FROM chunk_text_totals t WHERE t.namespace = current_rag_namespace();
    GET DIAGNOSTICS chunk_totals = ROW_COUNT;
    RETURN NEXT;
END $$;
COMMENT ON FUNCTION erase_statistics() IS
    'Erasure''s last step: apply what the transaction staged, then delete the statistics rows of the '
    'transaction''s user (memory_text_totals) and namespace (chunk_text_totals), so that no row names an '
    'erased user. The application role may call it; row-level security keeps it to the transaction''s scope.';
REVOKE ALL ON FUNCTION erase_statistics() FROM PUBLIC;
