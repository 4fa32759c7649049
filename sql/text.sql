-- Text of memories and chunks: the text search configuration, lexemes, term counts and the query's terms.
-- Applied by every migration in which this file changed (sql/README.md); tests/test_sql_live.py
-- holds it equal to a migrated database.

CREATE OR REPLACE FUNCTION fts_term_count(p_vector tsvector)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
AS $$
BEGIN
    RETURN (SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0) FROM unnest(p_vector) AS u);
END $$;
COMMENT ON FUNCTION fts_term_count(tsvector) IS
    'How many terms (with repeats) a tsvector holds: the document length of BM25.';

CREATE OR REPLACE FUNCTION text_config_for(p_text text)
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

CREATE OR REPLACE FUNCTION fts_segment(p_text text)
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
                 regexp_replace(
                     regexp_replace(p_text, '[\u2000-\u206f\u3000-\u303f\uff00-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]', ' ', 'g'),
                     '([^\s\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]{100})', '\1 ', 'g'),
                 '([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+)|([^\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+)',
                 'g') WITH ORDINALITY AS r(m, n));
END $$;
COMMENT ON FUNCTION fts_segment(text) IS
    'The text with every run of CJK characters written as its overlapping character pairs (a run of '
    'one character as itself), separated by spaces, CJK and general punctuation (，。「」…—) made '
    'spaces, and a space after every 100 characters of any other run without one (PostgreSQL''s parser '
    'takes time that grows with the square of such a run, "_x_x_x…"): how text becomes words for '
    'full-text search.';

CREATE OR REPLACE FUNCTION text_lexemes(p_text text, p_config regconfig)
RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN to_tsvector(p_config, fts_segment(p_text));
COMMENT ON FUNCTION text_lexemes(text, regconfig) IS
    'The lexemes of a text under a configuration, CJK runs as character pairs (fts_segment).';

CREATE OR REPLACE FUNCTION terms_query(p_terms text[])
RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN (SELECT to_tsquery('simple'::regconfig, string_agg(quote_literal(t), ' | ')) FROM unnest(p_terms) AS t);
COMMENT ON FUNCTION terms_query(text[]) IS
    'A tsquery matching any of the terms (already lexemes: nothing is stemmed again); NULL for none.';

-- query_terms calls fts_segment and text_config_for by their bare names: it carries the schema's
-- search_path, which a Citus worker, where a shard query calls it, would not otherwise have
-- ("function fts_segment(text) does not exist").
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

CREATE OR REPLACE FUNCTION _set_text_fields()
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
    IF TG_NARGS > 0 AND TG_ARGV[0] = 'headings' THEN  -- a chunk: its heading path, then its text
        NEW.lexemes := chunk_lexemes(NEW.heading_path, NEW.content, NEW.text_config);
    ELSE
        NEW.lexemes := text_lexemes(NEW.content, NEW.text_config);
    END IF;
    NEW.term_count := fts_term_count(NEW.lexemes);
    RETURN NEW;
END $$;
COMMENT ON FUNCTION _set_text_fields() IS
    'Internal (trigger): text_config (when not given), lexemes and term_count of a new or changed row; '
    'with the argument ''headings'' (chunks), the lexemes of chunk_lexemes.';

CREATE OR REPLACE FUNCTION chunk_lexemes(p_heading_path text[], p_content text, p_config regconfig)
RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN text_lexemes(repeat(coalesce(array_to_string(p_heading_path, ' '), '') || E'\n',
                           ranking_weight('chunk_heading')::integer) || p_content, p_config);
COMMENT ON FUNCTION chunk_lexemes(text[], text, regconfig) IS
    'The lexemes of a chunk: its heading path, counted chunk_heading times (ranking_weights()), then '
    'its text: a section''s title finds every chunk of the section (its embedding reads the path too), '
    'and a word of the title weighs more in BM25 than one of the text.';

-- One user's writes (one namespace's, for chunks) apply their statistics one after the other: at
-- commit, each write takes, until its transaction ends, a lock named by the totals table and the
-- key, in key order (sql/statistics.sql). Without it, two first writes of a new user, with no
-- totals row yet to lock, deadlocked over the term counts.
CREATE OR REPLACE FUNCTION lock_writers(p_totals regclass, p_keys text[])
RETURNS boolean
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(s.lock)
    FROM (SELECT DISTINCT hashtextextended(k, p_totals::oid::bigint) AS lock
          FROM unnest(p_keys) AS k WHERE k IS NOT NULL ORDER BY 1) AS s;
    RETURN true;
END $$;
COMMENT ON FUNCTION lock_writers(regclass, text[]) IS
    'Wait for and hold, until the transaction ends, the write lock of each key (users of memory_text_totals, '
    'namespaces of chunk_text_totals), in one order for every writer: one user''s statistics are applied by '
    'one transaction at a time, and never deadlock.';

CREATE OR REPLACE FUNCTION _clear_terms()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    EXECUTE format('TRUNCATE %I', TG_ARGV[0]);  -- TRUNCATE, not DELETE: row-level security applies to DELETE
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _clear_terms() IS 'Internal (truncate trigger): empty the totals of a truncated table.';

-- Row triggers of a Citus cluster (sql/citus/distribute.sql), where statement triggers do not run
-- on the shards and no step at commit reaches them: a change of text moves the totals, and the term
-- counts follow each row, at once.
CREATE OR REPLACE FUNCTION _recount_terms()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_was integer := CASE WHEN to_jsonb(OLD) ->> 'forgotten_at' IS NULL THEN 1 ELSE 0 END;  -- live (a
    v_is integer := CASE WHEN to_jsonb(NEW) ->> 'forgotten_at' IS NULL THEN 1 ELSE 0 END;   -- chunk always)
BEGIN
    PERFORM lock_writers(TG_ARGV[0]::regclass, ARRAY[to_jsonb(NEW) ->> TG_ARGV[1]]);
    IF TG_NARGS < 3 THEN  -- the write path before revision 0002 (its downgrade): every row counted
        v_was := 1;
        v_is := 1;
    END IF;
    EXECUTE format('UPDATE %1$I SET %3$I = %3$I + $1, terms = terms + $2 WHERE %2$I = $3', TG_ARGV[0], TG_ARGV[1],
                   coalesce(TG_ARGV[2], CASE TG_ARGV[1] WHEN 'user_id' THEN 'memories' ELSE 'chunks' END))
    USING v_is - v_was, v_is * NEW.term_count - v_was * OLD.term_count, to_jsonb(NEW) ->> TG_ARGV[1];
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _recount_terms() IS
    'Internal (row trigger): move the totals (the table, key and count columns its arguments name) by the '
    'change of a row''s term count or of its being live.';

CREATE OR REPLACE FUNCTION _count_lexemes_row()
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
    PERFORM lock_writers('memory_text_totals', ARRAY[v_user]);
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

CREATE OR REPLACE FUNCTION _merge_pending_terms()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER  -- gin_clean_pending_list is for the index's owner
SET search_path FROM CURRENT
AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM new_rows OFFSET 1) THEN  -- more than one row
        PERFORM gin_clean_pending_list(TG_ARGV[0]::regclass);
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _merge_pending_terms() IS
    'Internal (statement trigger): after an insert of more than one row, merge the pending list of '
    'the GIN index the trigger names into the index, so that no search reads those rows from a list.';
