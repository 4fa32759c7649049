-- Functions of the analytics views.
-- The live definitions (what `\df+` shows at head); tests/test_sql_live.py holds them equal
-- to a migrated database. Alembic's revisions run the frozen scripts under alembic/sql/.

CREATE OR REPLACE FUNCTION near_duplicates(p_user_id text, p_threshold double precision DEFAULT 0.95,
                                p_limit integer DEFAULT 100)
RETURNS TABLE (id uuid, duplicate_of uuid, similarity double precision, content text, other_content text)
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT a.id, b.id, 1 - (a.embedding <=> b.embedding), a.content, b.content
    FROM memories a
    JOIN memories b ON b.user_id = a.user_id AND b.id < a.id AND b.embedding_model = a.embedding_model
    WHERE a.user_id = p_user_id AND a.forgotten_at IS NULL AND b.forgotten_at IS NULL
      AND a.embedding IS NOT NULL AND 1 - (a.embedding <=> b.embedding) >= p_threshold
    ORDER BY 3 DESC, 1, 2
    LIMIT p_limit
$$;
COMMENT ON FUNCTION near_duplicates(text, double precision, integer) IS
    'Pairs of live memories of one user whose vectors (same model) have a cosine similarity of at '
    'least p_threshold. Compares every pair of the user: meant for occasional review.';
