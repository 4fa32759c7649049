-- Embedding models: one vector column and its indexes per registered model.
-- Applied by every migration in which this file changed (sql/README.md); tests/test_sql_live.py
-- holds it equal to a migrated database.

CREATE OR REPLACE FUNCTION vector_type_for(p_dimension integer)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN CASE WHEN p_dimension > 2000 THEN 'halfvec' ELSE 'vector' END;
COMMENT ON FUNCTION vector_type_for(integer) IS
    'The pgvector type an index of this dimension uses: vector up to 2,000, halfvec above.';

CREATE OR REPLACE FUNCTION _create_model_indexes(p_model text, p_dimension integer, p_suffix text,
                                                 p_m integer, p_ef_construction integer)
RETURNS void
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    v_type text := vector_type_for(p_dimension);
    v_target text[];
BEGIN
    FOREACH v_target SLICE 1 IN ARRAY ARRAY[['memories', 'embedding', 'memories_embedding_'],
                                            ['chunks', 'embedding', 'chunks_embedding_'],
                                            ['memories', 'text_embedding', 'memories_text_embedding_']] LOOP
        EXECUTE format(
            'CREATE INDEX IF NOT EXISTS %I ON %I USING hnsw ((%I::%s(%s)) %s_cosine_ops) '
            'WITH (m = %s, ef_construction = %s) WHERE %I = %L',
            v_target[3] || p_suffix, v_target[1], v_target[2], v_type, p_dimension, v_type,
            p_m, p_ef_construction, v_target[2] || '_model', p_model);
    END LOOP;
END $$;
COMMENT ON FUNCTION _create_model_indexes(text, integer, text, integer, integer) IS
    'Internal: the partial HNSW indexes of one embedding model (idempotent).';
REVOKE ALL ON FUNCTION _create_model_indexes(text, integer, text, integer, integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION register_embedding_model(p_model text, p_dimension integer,
                                                    p_m integer DEFAULT 16,
                                                    p_ef_construction integer DEFAULT 64)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_known integer;
    v_suffix text := substr(md5(p_model), 1, 16);
BEGIN
    IF p_model IS NULL OR btrim(p_model) = '' OR length(p_model) > 200 THEN
        RAISE EXCEPTION 'model must be a non-empty name of at most 200 characters, got %',
            coalesce(quote_literal(p_model), 'NULL') USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_dimension IS NULL OR p_dimension NOT BETWEEN 1 AND 4000 THEN
        RAISE EXCEPTION 'dimension must be between 1 and 4000, got %', coalesce(p_dimension::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_m NOT BETWEEN 2 AND 100 OR p_ef_construction NOT BETWEEN 4 AND 1000 THEN
        RAISE EXCEPTION 'm must be between 2 and 100 and ef_construction between 4 and 1000'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('hello_pgmem.register_embedding_model'));
    SELECT dimension INTO v_known FROM embedding_models WHERE model = p_model;
    IF FOUND THEN
        IF v_known <> p_dimension THEN
            RAISE EXCEPTION 'model % is registered with % dimensions, got %', quote_literal(p_model),
                v_known, p_dimension USING ERRCODE = 'invalid_parameter_value';
        END IF;
        RETURN;
    END IF;
    IF (SELECT count(*) FROM embedding_models) >= 32 THEN  -- each model has three HNSW indexes
        RAISE EXCEPTION 'at most 32 embedding models may be registered; % would be one more', quote_literal(p_model)
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'every model costs three HNSW indexes, which every write of a memory updates';
    END IF;
    INSERT INTO embedding_models (model, dimension, index_suffix) VALUES (p_model, p_dimension, v_suffix);
    PERFORM _create_model_indexes(p_model, p_dimension, v_suffix, p_m, p_ef_construction);
END $$;
COMMENT ON FUNCTION register_embedding_model(text, integer, integer, integer) IS
    'Register an embedding model and its dimension, creating its partial HNSW indexes (cosine) '
    'on memories.embedding, memories.text_embedding and chunks.embedding. Idempotent; a different '
    'dimension for a known model is an error, and so is a 33rd model. Runs as the schema owner, so the '
    'application role needs no DDL rights.';
REVOKE ALL ON FUNCTION register_embedding_model(text, integer, integer, integer) FROM PUBLIC;
