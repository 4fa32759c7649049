-- Sessions as documents: the live long-term memories of one session as one text. session_terms
-- holds its term frequencies (and, counted, each lexeme's session frequency), memory_sessions its
-- length and the sum of its memories' vectors of one model, memory_text_totals the user's number
-- of sessions and their terms. Every write stages its changed memories and they are applied
-- here, at its commit, after the user's write lock (sql/statistics.sql). search_sessions ranks
-- whole sessions from them (session_scores).

CREATE OR REPLACE FUNCTION _apply_session_changes(p_xact bigint)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    -- What the transaction's staged memories (sql/statistics.sql) change in their sessions, net:
    -- how many live memories and terms each session gains or loses; a session exists while it
    -- holds a live memory, and the user's number of sessions and their terms move with them.
    WITH net AS (
        SELECT c.user_id, c.session_id, sum(c.sign)::integer AS memories, sum(c.sign * c.term_count)::bigint AS terms
        FROM memory_stat_changes c
        WHERE c.xact = p_xact AND c.live AND c.session_id IS NOT NULL
        GROUP BY 1, 2 HAVING sum(c.sign) <> 0 OR sum(c.sign * c.term_count) <> 0
    ), changed AS (
        INSERT INTO memory_sessions AS s (user_id, session_id, memories, terms)
        SELECT n.user_id, n.session_id, n.memories, n.terms FROM net n ORDER BY 1, 2
        ON CONFLICT (user_id, session_id) DO UPDATE
        SET memories = s.memories + EXCLUDED.memories, terms = s.terms + EXCLUDED.terms
        RETURNING s.user_id, s.session_id, s.memories
    ), counted AS (
        SELECT n.user_id,
               count(*) FILTER (WHERE c.memories > 0 AND c.memories - n.memories <= 0)
               - count(*) FILTER (WHERE c.memories <= 0 AND c.memories - n.memories > 0) AS sessions,
               sum(n.terms) AS terms
        FROM changed c JOIN net n ON n.user_id = c.user_id AND n.session_id = c.session_id
        GROUP BY 1
    )
    INSERT INTO memory_text_totals AS t (user_id, sessions, session_terms)
    SELECT c.user_id, c.sessions, c.terms FROM counted c ORDER BY 1
    ON CONFLICT (user_id) DO UPDATE
    SET sessions = t.sessions + EXCLUDED.sessions, session_terms = t.session_terms + EXCLUDED.session_terms;

    DELETE FROM memory_sessions s
    USING (SELECT DISTINCT c.user_id, c.session_id FROM memory_stat_changes c
           WHERE c.xact = p_xact AND c.session_id IS NOT NULL) AS c
    WHERE s.user_id = c.user_id AND s.session_id = c.session_id AND s.memories <= 0;

    -- The sum of a session's vectors of one model: the session's own model moves by what came
    -- and went; the first vectors of another model (a re-embedding, or the first vector of a
    -- session whose memories waited for theirs) make it again from the session's memories.
    WITH moved AS (
        SELECT c.user_id, c.session_id, c.embedding_model AS model,
               sum(c.embedding) FILTER (WHERE c.sign > 0) AS added,
               sum(c.embedding) FILTER (WHERE c.sign < 0) AS removed,
               sum(c.sign)::integer AS vectors
        FROM memory_stat_changes c
        WHERE c.xact = p_xact AND c.live AND c.session_id IS NOT NULL AND c.embedding IS NOT NULL
          AND c.memory_type <> 'perceptual'
        GROUP BY 1, 2, 3
    ), kept AS (
        UPDATE memory_sessions s
        SET embedding_sum = CASE WHEN m.added IS NULL THEN s.embedding_sum - m.removed
                                 WHEN m.removed IS NULL THEN s.embedding_sum + m.added
                                 ELSE s.embedding_sum + m.added - m.removed END
        FROM moved m
        WHERE s.user_id = m.user_id AND s.session_id = m.session_id AND s.embedding_model = m.model
          AND s.embedding_sum IS NOT NULL
        RETURNING s.user_id, s.session_id
    )
    UPDATE memory_sessions s
    SET embedding_model = m.model,
        embedding_sum = (SELECT sum(x.embedding) FROM memories x
                         WHERE x.user_id = s.user_id AND x.session_id = s.session_id
                           AND x.embedding_model = m.model AND x.forgotten_at IS NULL
                           AND x.memory_type <> 'perceptual')
    FROM (SELECT DISTINCT ON (v.user_id, v.session_id) v.user_id, v.session_id, v.model
          FROM moved v WHERE v.vectors > 0
          ORDER BY v.user_id, v.session_id, v.vectors DESC, v.model) AS m
    WHERE s.user_id = m.user_id AND s.session_id = m.session_id
      AND (s.embedding_model IS DISTINCT FROM m.model OR s.embedding_sum IS NULL)
      AND NOT EXISTS (SELECT 1 FROM kept k WHERE k.user_id = s.user_id AND k.session_id = s.session_id);

    -- each session's term frequencies
    MERGE INTO session_terms AS t
    USING (SELECT c.user_id, u.lexeme, c.session_id,
                  sum(c.sign * coalesce(array_length(u.positions, 1), 1))::integer AS tf
           FROM memory_stat_changes c, unnest(c.lexemes) AS u
           WHERE c.xact = p_xact AND c.live AND c.session_id IS NOT NULL
           GROUP BY 1, 2, 3 HAVING sum(c.sign * coalesce(array_length(u.positions, 1), 1)) <> 0) AS d
    ON t.user_id = d.user_id AND t.lexeme = d.lexeme AND t.session_id = d.session_id
    WHEN MATCHED AND t.tf + d.tf <= 0 THEN DELETE
    WHEN MATCHED THEN UPDATE SET tf = t.tf + d.tf
    WHEN NOT MATCHED AND d.tf > 0 THEN
        INSERT (user_id, lexeme, session_id, tf) VALUES (d.user_id, d.lexeme, d.session_id, d.tf);
END $$;
COMMENT ON FUNCTION _apply_session_changes(bigint) IS
    'Internal: apply the memories a transaction staged (sql/statistics.sql) to their sessions: '
    'memory_sessions (memories, terms, summed vector), session_terms and the user''s session totals.';

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
        SELECT q.term, bm25_idf(t.sessions, q.df) AS w
        FROM totals t,
             LATERAL (SELECT x.term, (SELECT count(*) FROM session_terms s
                                      WHERE s.user_id = p_user_id AND s.lexeme = x.term) AS df
                      FROM unnest(p_terms) AS x(term)) AS q
        WHERE q.df > 0
    )
    SELECT s.session_id,
           coalesce((SELECT sum(bm25(i.w, st.tf, s.terms, t.average))
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
    'bm25()) and the cosine of its memories'' summed vector to the query vector of p_model.';
