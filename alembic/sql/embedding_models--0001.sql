-- The embedding-model registry. Several models (and dimensions) coexist in one vector column;
-- each registered model gets a partial HNSW index per vector table on
-- (embedding::vector(N)) WHERE embedding_model = '<model>', and searches use that same
-- expression and predicate so the planner can take the index. Models above 2,000 dimensions
-- are indexed as halfvec (pgvector indexes vector up to 2,000 and halfvec up to 4,000).

CREATE FUNCTION vector_type_for(p_dimension integer)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN CASE WHEN p_dimension > 2000 THEN 'halfvec' ELSE 'vector' END;
COMMENT ON FUNCTION vector_type_for(integer) IS
    'The pgvector type an index of this dimension uses: vector up to 2,000, halfvec above.';

CREATE FUNCTION register_embedding_model(p_model text, p_dimension integer,
                                         p_m integer DEFAULT 16,
                                         p_ef_construction integer DEFAULT 64)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_known integer;
    v_suffix text := substr(md5(p_model), 1, 16);
    v_type text := vector_type_for(p_dimension);
    v_table text;
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
    -- One registration at a time, so two processes cannot both build the indexes.
    PERFORM pg_advisory_xact_lock(hashtext('hello_pgmem.register_embedding_model'));
    SELECT dimension INTO v_known FROM embedding_models WHERE model = p_model;
    IF FOUND THEN
        IF v_known <> p_dimension THEN
            RAISE EXCEPTION 'model % is registered with % dimensions, got %', quote_literal(p_model),
                v_known, p_dimension USING ERRCODE = 'invalid_parameter_value';
        END IF;
        RETURN;
    END IF;
    INSERT INTO embedding_models (model, dimension, index_suffix) VALUES (p_model, p_dimension, v_suffix);
    FOREACH v_table IN ARRAY ARRAY['memories', 'chunks'] LOOP
        EXECUTE format(
            'CREATE INDEX %I ON %I USING hnsw ((embedding::%s(%s)) %s_cosine_ops) '
            'WITH (m = %s, ef_construction = %s) WHERE embedding_model = %L',
            v_table || '_embedding_' || v_suffix, v_table, v_type, p_dimension, v_type,
            p_m, p_ef_construction, p_model);
    END LOOP;
END $$;
REVOKE ALL ON FUNCTION register_embedding_model(text, integer, integer, integer) FROM PUBLIC;
COMMENT ON FUNCTION register_embedding_model(text, integer, integer, integer) IS
    'Register an embedding model and its dimension, creating its partial HNSW indexes (cosine) '
    'on memories and chunks. Idempotent; a different dimension for a known model is an error. '
    'Runs as the schema owner so the application role needs no DDL rights.';
