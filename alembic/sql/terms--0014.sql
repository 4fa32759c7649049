-- Revision 0014: per user, how many live memories hold each term, kept by triggers. The hybrid
-- search reads a query's document frequencies here in one index lookup; it used to count each
-- term's memories up to a cap of 200 with a GIN bitmap scan, which collects every match first:
-- 1.3-2 ms a term at 100,000 memories of one user, most of a search's time there. The counts are
-- exact, for common terms too (their BM25 weights were an estimate from the planner's statistics).
--
-- Every change of a user's counts first locks the user's row of memory_text_totals, which every
-- insert and delete of memories already updates: a user's count rows are written by one
-- transaction at a time, in one order, and two writers cannot deadlock on them.

CREATE TABLE memory_term_counts (
    user_id  text NOT NULL,
    lexeme   text NOT NULL,
    memories integer NOT NULL,
    PRIMARY KEY (user_id, lexeme)
);
COMMENT ON TABLE memory_term_counts IS
    'Per user and lexeme: how many of the user''s live (not forgotten) memories hold it, kept by '
    'triggers; the document frequencies of the hybrid search''s BM25.';

CREATE FUNCTION _count_lexemes()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    -- A statement trigger cannot name both transition tables for INSERT and DELETE: the one this
    -- operation has, each in a statement of its own.
    IF TG_OP = 'INSERT' THEN
        PERFORM 1 FROM memory_text_totals t WHERE t.user_id IN (SELECT user_id FROM new_rows)
        ORDER BY t.user_id FOR UPDATE;
        INSERT INTO memory_term_counts AS t (user_id, lexeme, memories)
        SELECT r.user_id, u.lexeme, count(*)
        FROM new_rows r, unnest(r.lexemes) AS u
        WHERE r.forgotten_at IS NULL
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (user_id, lexeme) DO UPDATE SET memories = t.memories + EXCLUDED.memories;
    ELSE
        PERFORM 1 FROM memory_text_totals t WHERE t.user_id IN (SELECT user_id FROM old_rows)
        ORDER BY t.user_id FOR UPDATE;
        UPDATE memory_term_counts t SET memories = t.memories - d.memories
        FROM (SELECT r.user_id, u.lexeme, count(*) AS memories
              FROM old_rows r, unnest(r.lexemes) AS u
              WHERE r.forgotten_at IS NULL
              GROUP BY 1, 2) AS d
        WHERE t.user_id = d.user_id AND t.lexeme = d.lexeme;
        DELETE FROM memory_term_counts t
        WHERE t.memories <= 0 AND (t.user_id, t.lexeme) IN (
            SELECT r.user_id, u.lexeme FROM old_rows r, unnest(r.lexemes) AS u WHERE r.forgotten_at IS NULL);
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _count_lexemes() IS
    'Internal (statement trigger): count the terms of inserted live memories, or uncount deleted ones.';

CREATE FUNCTION _count_lexemes_row()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_user text := CASE TG_OP WHEN 'DELETE' THEN OLD.user_id ELSE NEW.user_id END;
    v_counts text := 'memory_term_counts';
BEGIN
    IF TG_TABLE_NAME <> 'memories' THEN
        -- Fired on a Citus shard of memories (memories_<shard id>): the user's shard of the
        -- counts, on the same node (co-located). A distributed INSERT from here cost 1.3 ms a row.
        EXECUTE 'SELECT shard_name($1, get_shard_id_for_distribution_column($1, $2))'
        INTO v_counts USING 'memory_term_counts'::regclass, v_user;
    END IF;
    PERFORM 1 FROM memory_text_totals t WHERE t.user_id = v_user FOR UPDATE;
    EXECUTE format($sql$
        WITH change AS (
            SELECT d.lexeme, sum(d.memories)::integer AS memories
            FROM (SELECT u.lexeme, 1 AS memories FROM unnest($1::tsvector) AS u WHERE $3
                  UNION ALL
                  SELECT u.lexeme, -1 FROM unnest($2::tsvector) AS u WHERE $4) AS d
            GROUP BY 1 HAVING sum(d.memories) <> 0
        )
        INSERT INTO %s AS t (user_id, lexeme, memories)
        SELECT $5, c.lexeme, c.memories FROM change c ORDER BY c.lexeme
        ON CONFLICT (user_id, lexeme) DO UPDATE SET memories = t.memories + EXCLUDED.memories$sql$, v_counts)
    USING NEW.lexemes, OLD.lexemes, TG_OP <> 'DELETE' AND NEW.forgotten_at IS NULL,
          TG_OP <> 'INSERT' AND OLD.forgotten_at IS NULL, v_user;
    IF TG_OP <> 'INSERT' THEN
        EXECUTE format('DELETE FROM %s t WHERE t.user_id = $1 AND t.memories <= 0'
                       ' AND t.lexeme IN (SELECT u.lexeme FROM unnest($2::tsvector) AS u)', v_counts)
        USING v_user, OLD.lexemes;
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _count_lexemes_row() IS
    'Internal (row trigger): move the term counts by a memory''s change of text or of being forgotten '
    '(and, on Citus, by an insert or delete; fired on a shard, it writes the worker''s shard of the counts).';

DO $counts$
DECLARE
    v_distributed boolean := false;  -- a schema distributed over Citus before this revision
    v_user text;
    v_all text;
BEGIN
    IF to_regclass('pg_dist_partition') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = $1)'
        INTO v_distributed USING 'memories'::regclass;
    END IF;
    IF v_distributed THEN  -- the table joins its users' shards; the policies hold no subquery there
        PERFORM create_distributed_table('memory_term_counts', 'user_id', colocate_with => 'memories');
        PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);  -- triggers on shards
        v_user := 'current_memory_user()';
        v_all := 'all_rows_requested()';
    ELSE
        v_user := '(SELECT current_memory_user())';
        v_all := '(SELECT all_rows_requested())';
    END IF;
    INSERT INTO memory_term_counts (user_id, lexeme, memories)
    SELECT m.user_id, u.lexeme, count(*)
    FROM memories m, unnest(m.lexemes) AS u
    WHERE m.forgotten_at IS NULL
    GROUP BY 1, 2;

    -- An update changes the counts only when it changes the text or forgets: a row trigger with a
    -- condition costs nothing for the others (access counts, importance); a statement trigger with
    -- transition tables cannot name columns.
    CREATE TRIGGER memories_term_counts_update AFTER UPDATE OF content, text_config, forgotten_at ON memories
        FOR EACH ROW WHEN (OLD.lexemes IS DISTINCT FROM NEW.lexemes
                           OR (OLD.forgotten_at IS NULL) <> (NEW.forgotten_at IS NULL))
        EXECUTE FUNCTION _count_lexemes_row();
    IF v_distributed THEN  -- statement triggers with transition tables do not run on shards
        CREATE TRIGGER memories_term_counts_rows AFTER INSERT OR DELETE ON memories
            FOR EACH ROW EXECUTE FUNCTION _count_lexemes_row();
    ELSE
        CREATE TRIGGER memories_term_counts_insert AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
            FOR EACH STATEMENT EXECUTE FUNCTION _count_lexemes();
        CREATE TRIGGER memories_term_counts_delete AFTER DELETE ON memories REFERENCING OLD TABLE AS old_rows
            FOR EACH STATEMENT EXECUTE FUNCTION _count_lexemes();
    END IF;
    CREATE TRIGGER memories_term_counts_truncate AFTER TRUNCATE ON memories
        FOR EACH STATEMENT EXECUTE FUNCTION _clear_terms('memory_term_counts');

    -- Row-level security, as on the totals (revision 0009); on Citus without the subqueries.
    ALTER TABLE memory_term_counts ENABLE ROW LEVEL SECURITY;
    ALTER TABLE memory_term_counts FORCE ROW LEVEL SECURITY;
    EXECUTE format('CREATE POLICY user_rows ON memory_term_counts USING (user_id = %1$s) WITH CHECK (user_id = %1$s)',
                   v_user);
    EXECUTE format('CREATE POLICY all_rows ON memory_term_counts TO CURRENT_USER USING (%1$s) WITH CHECK (%1$s)',
                   v_all);
END $counts$;
