-- Full-text keyword scoring that works for Chinese, Japanese and Korean text too.
-- PostgreSQL's parsers do not segment CJK runs, so each CJK character is spaced out and becomes
-- a token of its own; a query for 前端工程师 then matches as a phrase of adjacent characters.

CREATE FUNCTION fts_prepare(content text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN regexp_replace(content, '([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff])',
                      ' \1 ', 'g');
COMMENT ON FUNCTION fts_prepare(text) IS
    'Internal: put spaces around every CJK character so the simple parser sees one token each.';

CREATE FUNCTION fts_document(content text)
RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN to_tsvector('simple'::regconfig, fts_prepare(content));
COMMENT ON FUNCTION fts_document(text) IS
    'The tsvector stored in search_text columns: simple configuration, one token per CJK character.';

CREATE FUNCTION fts_query(query text)
RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN phraseto_tsquery('simple'::regconfig, fts_prepare(query));
COMMENT ON FUNCTION fts_query(text) IS
    'A tsquery matching query as a phrase (adjacent tokens), to be used with search_text columns.';
