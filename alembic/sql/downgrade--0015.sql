-- Undo revision 0015 after search--0007.sql has restored memory_candidates (ef_search 2 x the pool):
-- drop hnsw_ef_search and restore _count_lexemes as revision 0014 defined it.
DROP FUNCTION hnsw_ef_search(text, integer, text);

CREATE OR REPLACE FUNCTION _count_lexemes()
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
