-- Sessions as documents: the live long-term memories of one session as one text. session_terms
-- holds its term frequencies (and, counted, each lexeme's session frequency), memory_sessions its
-- length and the sum of its memories' vectors of one model, memory_text_totals the user's number
-- of sessions and their terms. The triggers keep them from every write, in the write's
-- transaction, after the user's write lock (lock_writers). search_sessions ranks whole sessions
-- from them (session_scores).

DROP FUNCTION IF EXISTS _move_sessions(memories[], integer);
DROP FUNCTION IF EXISTS _change_sessions(text[], text[], tsvector[], integer[], vector[], text[], integer);

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

-- The statements that move rows between sessions, over a relation of memories: a statement
-- trigger's transition table, or a row trigger's one row ($1). They aggregate the rows where they
-- are, per session and per session and lexeme, so a statement of any size moves without copying
-- its rows into an array (an array is capped at 1 GB). The caller holds the users' write locks.
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

CREATE OR REPLACE FUNCTION session_scores(p_user_id text, p_model text, p_query vector, p_terms text[],
                                          p_sessions text[])
RETURNS TABLE (session_id text, bm25 double precision, similarity double precision)
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    WITH totals AS (
        SELECT greatest(t.sessions, 1)::double precision AS sessions,
               greatest(t.session_terms::double precision / greatest(t.sessions, 1), 1) AS average
        FROM memory_text_totals t WHERE t.user_id = p_user_id
    ), idf AS (  -- each term's session frequency, counted
        SELECT q.term, ln(1 + (t.sessions - q.df + 0.5) / (q.df + 0.5)) AS w
        FROM totals t,
             LATERAL (SELECT x.term, (SELECT count(*) FROM session_terms s
                                      WHERE s.user_id = p_user_id AND s.lexeme = x.term) AS df
                      FROM unnest(p_terms) AS x(term)) AS q
        WHERE q.df > 0
    )
    SELECT s.session_id,
           coalesce((SELECT sum(i.w * st.tf * 2.2 / (st.tf + 1.2 * (0.25 + 0.75 * s.terms / t.average)))
                     FROM session_terms st JOIN idf i ON i.term = st.lexeme
                     WHERE st.user_id = p_user_id AND st.lexeme = ANY (p_terms) AND st.session_id = s.session_id),
                    0)::double precision,
           CASE WHEN s.embedding_model = p_model AND s.embedding_sum IS NOT NULL
                THEN 1 - (s.embedding_sum <=> p_query) ELSE 0 END::double precision
    FROM memory_sessions s, totals t
    WHERE s.user_id = p_user_id AND s.session_id = ANY (p_sessions)
$$;
COMMENT ON FUNCTION session_scores(text, text, vector, text[], text[]) IS
    'Each named session of a user as one document: its BM25 for the query terms (session frequencies, '
    'k1 1.2, b 0.75) and the cosine of its memories'' summed vector to the query vector of p_model.';
