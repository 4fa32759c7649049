-- query_terms calls fts_segment and text_config_for by their bare names. On one server the
-- caller's search_path finds them; on a Citus worker, where a shard query calls it, nothing
-- does ("function fts_segment(text) does not exist"). It is made again with the schema's
-- search_path (CREATE: Citus refuses ALTER FUNCTION ... SET ... FROM CURRENT on a function it
-- has distributed). Same body as in text--0009.sql.
CREATE OR REPLACE FUNCTION query_terms(p_query text)
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
SET search_path FROM CURRENT
AS $$
DECLARE
    v_text text := fts_segment(p_query);
    v_own tsvector := to_tsvector(text_config_for(p_query), v_text);
    v_positions smallint[];
BEGIN
    SELECT coalesce(array_agg(p), '{}') INTO v_positions FROM unnest(v_own) AS u, unnest(u.positions) AS p;
    RETURN ARRAY(
        SELECT u.lexeme FROM unnest(v_own) AS u
        UNION  -- the same words unstemmed, so that memories written in other configurations match
        SELECT u.lexeme FROM unnest(to_tsvector('simple'::regconfig, v_text)) AS u WHERE u.positions && v_positions
        ORDER BY 1);
END $$;
COMMENT ON FUNCTION query_terms(text) IS
    'The search terms of a query: its lexemes under its own configuration (English stems without '
    'stop words, CJK character pairs), and the unstemmed forms of the same words.';
