-- Revision 0009, part 1: language-aware full text for memories and chunks.
--
-- Every memory and chunk gets a text search configuration chosen from its text (text_config:
-- 'english' for English, stemmed and without stop words; 'simple' for Chinese, Japanese and
-- Korean, whose runs of characters become overlapping character pairs, and for other text),
-- its lexemes under it (lexemes) and how many terms it holds (term_count), written by a trigger
-- on every insert and change of content. Per user (per namespace for chunks) a totals row keeps
-- how many rows and terms there are, for BM25's length normalisation and inverse document
-- frequency; statement-level triggers keep it, one upsert per statement and user.

CREATE FUNCTION fts_segment(p_text text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
AS $$  -- PL/pgSQL rather than SQL: its plan is kept for the session instead of made at every call
BEGIN
    RETURN (
        SELECT coalesce(string_agg(
            CASE WHEN r.m[1] IS NOT NULL
                 THEN (SELECT string_agg(substr(r.m[1], i, 2), ' ' ORDER BY i)
                       FROM generate_series(1, greatest(length(r.m[1]) - 1, 1)) AS i)
                 ELSE r.m[2] END, ' ' ORDER BY r.n), '')
        FROM regexp_matches(
                 regexp_replace(p_text, '[\u2000-\u206f\u3000-\u303f\uff00-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]', ' ', 'g'),
                 '([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+)|([^\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+)',
                 'g') WITH ORDINALITY AS r(m, n));
END $$;
COMMENT ON FUNCTION fts_segment(text) IS
    'The text with every run of CJK characters written as its overlapping character pairs (a run of '
    'one character as itself), separated by spaces, and CJK and general punctuation (，。「」…—) made '
    'spaces: how Chinese becomes words for full-text search.';

CREATE FUNCTION fts_term_count(p_vector tsvector)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
AS $$
BEGIN
    RETURN (SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0) FROM unnest(p_vector) AS u);
END $$;
COMMENT ON FUNCTION fts_term_count(tsvector) IS
    'How many terms (with repeats) a tsvector holds: the document length of BM25.';

CREATE FUNCTION text_config_for(p_text text)
RETURNS regconfig
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN CASE
    WHEN p_text ~ '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]' THEN 'simple'::regconfig
    WHEN p_text !~ '[^\x01-\x7f]' THEN 'english'::regconfig
    WHEN fts_term_count(to_tsvector('english'::regconfig, p_text))
         <= 0.9 * fts_term_count(to_tsvector('simple'::regconfig, p_text)) THEN 'english'::regconfig
    ELSE 'simple'::regconfig
END;
COMMENT ON FUNCTION text_config_for(text) IS
    'The text search configuration for a text: simple for text with Chinese, Japanese or Korean '
    '(searched by character pairs), english for plain ASCII text and for text of which English stop '
    'words are a tenth or more, simple for any other text.';

CREATE FUNCTION text_lexemes(p_text text, p_config regconfig)
RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN to_tsvector(p_config, fts_segment(p_text));
COMMENT ON FUNCTION text_lexemes(text, regconfig) IS
    'The lexemes of a text under a configuration, CJK runs as character pairs (fts_segment).';

CREATE FUNCTION query_terms(p_query text)
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
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

CREATE FUNCTION terms_query(p_terms text[])
RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN (SELECT to_tsquery('simple'::regconfig, string_agg(quote_literal(t), ' | ')) FROM unnest(p_terms) AS t);
COMMENT ON FUNCTION terms_query(text[]) IS
    'A tsquery matching any of the terms (already lexemes: nothing is stemmed again); NULL for none.';

-- -------------------------------------------------------------------------- columns and triggers

CREATE FUNCTION _set_text_fields()
RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    IF TG_OP = 'INSERT' AND NEW.text_config IS NULL
       OR TG_OP = 'UPDATE' AND NEW.content IS DISTINCT FROM OLD.content
          AND NEW.text_config IS NOT DISTINCT FROM OLD.text_config THEN
        NEW.text_config := text_config_for(NEW.content);
    END IF;
    NEW.lexemes := text_lexemes(NEW.content, NEW.text_config);
    NEW.term_count := fts_term_count(NEW.lexemes);
    RETURN NEW;
END $$;
COMMENT ON FUNCTION _set_text_fields() IS
    'Internal (trigger): text_config (when not given), lexemes and term_count of a new or changed row.';

ALTER TABLE memories
    DROP COLUMN search_text,
    ADD COLUMN text_config regconfig,
    ADD COLUMN lexemes tsvector,
    ADD COLUMN term_count integer NOT NULL DEFAULT 0,
    ADD COLUMN recorded_at timestamptz NOT NULL DEFAULT now();
COMMENT ON COLUMN memories.created_at IS 'When what the memory records happened (given on add; the insertion time by default).';
COMMENT ON COLUMN memories.recorded_at IS 'When the memory was stored.';
COMMENT ON COLUMN memories.text_config IS 'The text search configuration of the content (text_config_for unless given).';
COMMENT ON COLUMN memories.lexemes IS 'The lexemes of the content under text_config: the lexical branch of search.';
COMMENT ON COLUMN memories.term_count IS 'How many terms the lexemes hold (BM25 document length).';

ALTER TABLE chunks
    DROP COLUMN search_text,
    ADD COLUMN text_config regconfig,
    ADD COLUMN lexemes tsvector,
    ADD COLUMN term_count integer NOT NULL DEFAULT 0;
COMMENT ON COLUMN chunks.text_config IS 'The text search configuration of the content (text_config_for unless given).';
COMMENT ON COLUMN chunks.lexemes IS 'The lexemes of the content under text_config: the lexical branch of search.';
COMMENT ON COLUMN chunks.term_count IS 'How many terms the lexemes hold (BM25 document length).';

-- Existing rows, in batches of 5,000 (in the migration's one transaction).
DO $$
DECLARE
    v_done integer;
BEGIN
    LOOP
        UPDATE memories m
        SET text_config = text_config_for(m.content),
            lexemes = text_lexemes(m.content, text_config_for(m.content)),
            term_count = fts_term_count(text_lexemes(m.content, text_config_for(m.content)))
        FROM (SELECT user_id, id FROM memories WHERE text_config IS NULL LIMIT 5000) AS b
        WHERE m.user_id = b.user_id AND m.id = b.id;
        GET DIAGNOSTICS v_done = ROW_COUNT;
        EXIT WHEN v_done = 0;
    END LOOP;
    LOOP
        UPDATE chunks c
        SET text_config = text_config_for(c.content),
            lexemes = text_lexemes(c.content, text_config_for(c.content)),
            term_count = fts_term_count(text_lexemes(c.content, text_config_for(c.content)))
        FROM (SELECT namespace, id FROM chunks WHERE text_config IS NULL LIMIT 5000) AS b
        WHERE c.namespace = b.namespace AND c.id = b.id;
        GET DIAGNOSTICS v_done = ROW_COUNT;
        EXIT WHEN v_done = 0;
    END LOOP;
END
$$;

ALTER TABLE memories ALTER COLUMN text_config SET NOT NULL, ALTER COLUMN lexemes SET NOT NULL;
ALTER TABLE chunks ALTER COLUMN text_config SET NOT NULL, ALTER COLUMN lexemes SET NOT NULL;

CREATE TRIGGER memories_text_fields BEFORE INSERT OR UPDATE OF content, text_config ON memories
    FOR EACH ROW EXECUTE FUNCTION _set_text_fields();
CREATE TRIGGER chunks_text_fields BEFORE INSERT OR UPDATE OF content, text_config ON chunks
    FOR EACH ROW EXECUTE FUNCTION _set_text_fields();

-- btree_gin lets the GIN index lead with the owner: a search reads the posting lists of one user.
CREATE INDEX memories_user_lexemes ON memories USING gin (user_id, lexemes) WHERE forgotten_at IS NULL;
CREATE INDEX chunks_namespace_lexemes ON chunks USING gin (namespace, lexemes);

-- -------------------------------------------------------------------------- totals

CREATE TABLE memory_text_totals (
    user_id  text PRIMARY KEY,
    memories bigint NOT NULL DEFAULT 0,
    terms    bigint NOT NULL DEFAULT 0
);
COMMENT ON TABLE memory_text_totals IS
    'Per user: how many memories (live or forgotten) and how many terms they hold, kept by triggers; '
    'BM25 reads the average length and the number of documents here.';

CREATE TABLE chunk_text_totals (
    namespace text PRIMARY KEY,
    chunks    bigint NOT NULL DEFAULT 0,
    terms     bigint NOT NULL DEFAULT 0
);
COMMENT ON TABLE chunk_text_totals IS
    'Per namespace: how many chunks and terms, kept by triggers, for BM25 over chunks.';

INSERT INTO memory_text_totals (user_id, memories, terms)
SELECT user_id, count(*), sum(term_count) FROM memories GROUP BY user_id;
INSERT INTO chunk_text_totals (namespace, chunks, terms)
SELECT namespace, count(*), sum(term_count) FROM chunks GROUP BY namespace;

-- The trigger functions serve both tables: TG_ARGV names the totals table, its key column and its
-- count column (memory_text_totals, user_id, memories or chunk_text_totals, namespace, chunks).
CREATE FUNCTION _count_terms()
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
    EXECUTE format(
        'INSERT INTO %1$I AS t (%2$I, %3$I, terms)
         SELECT r.%2$I, %5$scount(*), %5$ssum(r.term_count) FROM %4$I r GROUP BY 1 ORDER BY 1
         ON CONFLICT (%2$I) DO UPDATE SET %3$I = t.%3$I + EXCLUDED.%3$I, terms = t.terms + EXCLUDED.terms',
        TG_ARGV[0], TG_ARGV[1], TG_ARGV[2], v_rows, v_sign);
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _count_terms() IS
    'Internal (statement trigger): add the inserted or subtract the deleted rows and terms to the totals.';

-- A change of text is rare (an update of the content) and counted row by row, so that the many
-- updates that leave the text alone (access counts, importance, forgetting) cost nothing here.
CREATE FUNCTION _recount_terms()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    EXECUTE format('UPDATE %1$I SET terms = terms + $1 WHERE %2$I = $2', TG_ARGV[0], TG_ARGV[1])
    USING NEW.term_count - OLD.term_count, to_jsonb(NEW) ->> TG_ARGV[1];
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _recount_terms() IS
    'Internal (row trigger): move the totals by the change of a row''s term count.';

CREATE FUNCTION _clear_terms()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    EXECUTE format('TRUNCATE %I', TG_ARGV[0]);  -- TRUNCATE, not DELETE: row-level security applies to DELETE
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _clear_terms() IS 'Internal (truncate trigger): empty the totals of a truncated table.';

CREATE TRIGGER memories_totals_truncate AFTER TRUNCATE ON memories
    FOR EACH STATEMENT EXECUTE FUNCTION _clear_terms('memory_text_totals');
CREATE TRIGGER chunks_totals_truncate AFTER TRUNCATE ON chunks
    FOR EACH STATEMENT EXECUTE FUNCTION _clear_terms('chunk_text_totals');
CREATE TRIGGER memories_totals_insert AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _count_terms('memory_text_totals', 'user_id', 'memories');
CREATE TRIGGER memories_totals_delete AFTER DELETE ON memories REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _count_terms('memory_text_totals', 'user_id', 'memories');
CREATE TRIGGER memories_totals_update AFTER UPDATE OF content, text_config ON memories
    FOR EACH ROW WHEN (OLD.term_count IS DISTINCT FROM NEW.term_count)
    EXECUTE FUNCTION _recount_terms('memory_text_totals', 'user_id');
CREATE TRIGGER chunks_totals_insert AFTER INSERT ON chunks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _count_terms('chunk_text_totals', 'namespace', 'chunks');
CREATE TRIGGER chunks_totals_delete AFTER DELETE ON chunks REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _count_terms('chunk_text_totals', 'namespace', 'chunks');
CREATE TRIGGER chunks_totals_update AFTER UPDATE OF content, text_config ON chunks
    FOR EACH ROW WHEN (OLD.term_count IS DISTINCT FROM NEW.term_count)
    EXECUTE FUNCTION _recount_terms('chunk_text_totals', 'namespace');

-- Row-level security, as on every table of user or namespace data (revision 0008).
ALTER TABLE memory_text_totals ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_text_totals FORCE ROW LEVEL SECURITY;
CREATE POLICY user_rows ON memory_text_totals USING (user_id = (SELECT current_memory_user()))
    WITH CHECK (user_id = (SELECT current_memory_user()));
CREATE POLICY all_rows ON memory_text_totals TO CURRENT_USER USING ((SELECT all_rows_requested()))
    WITH CHECK ((SELECT all_rows_requested()));
ALTER TABLE chunk_text_totals ENABLE ROW LEVEL SECURITY;
ALTER TABLE chunk_text_totals FORCE ROW LEVEL SECURITY;
CREATE POLICY namespace_rows ON chunk_text_totals USING (namespace = (SELECT current_rag_namespace()))
    WITH CHECK (namespace = (SELECT current_rag_namespace()));
CREATE POLICY all_rows ON chunk_text_totals TO CURRENT_USER USING ((SELECT all_rows_requested()))
    WITH CHECK ((SELECT all_rows_requested()));
