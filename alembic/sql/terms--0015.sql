-- Revision 0015, term counts: a statement that deleted many memories at once (a test's cleanup of
-- ten users' memories) ran past the 30 s statement timeout in _count_lexemes. Its DELETE of the counts
-- that fell to zero tested (user_id, lexeme) IN (a subquery over the transition table), and with
-- no statistics for that table the planner could pick a subplan it rescans for every row of
-- memory_term_counts. The counts are now lowered and the zeros deleted in one statement that
-- joins the aggregated changes on the key.

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
