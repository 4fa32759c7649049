-- Distribute a migrated hello_pgmem schema over a Citus cluster ("hello-pgmem citus distribute").
-- Run once on the coordinator as the schema's owner, after "hello-pgmem migrate" with
-- PGMEM_AGE=off; the search_path names the schema first. What it does, and why each step:
--   * memories and every per-user table are hash-distributed by user_id and co-located; documents,
--     chunks and chunk totals by namespace; embedding_models, embedding_cache, access_tokens
--     (looked up by hash before the user is known) and relation_types become reference tables on
--     every node.
--   * Citus distributes no table that has triggers or whose policies hold a subquery: triggers
--     and policies are dropped first and made again after, the policies without the subquery.
--     Row-level security is off while existing rows are copied into the shards (COPY refuses
--     it) and on again, forced as before, in the same transaction.
--   * The term totals and the term counts are kept by row triggers, at once: statement triggers
--     with transition tables do not run on shards, nor does one step at commit reach the shards
--     (sql/statistics.sql stages every change on one server). Each row trigger takes its user's
--     (namespace's) write lock (lock_writers) on the worker that holds the user. The staging
--     triggers are not made again, nor the embedding queue's (a cluster's writes embed in the
--     write: docs/citus.md), nor the triggers that keep sessions as documents (memory_sessions
--     and session_terms stay empty on a cluster: whole sessions rank by their memories there), nor
--     the memories' context windows (memory_contexts stays empty: every user's search reads the
--     windows from memories, contexts_ready false).
--   * Foreign keys to embedding_models are added back once it is a reference table (but for the
--     embedding cache's, see below).
--   * The search and graph functions run on the worker that holds the user (distributed
--     functions, delegated by their first argument; the searches even inside transactions).
CREATE OR REPLACE FUNCTION _count_terms_row()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_row jsonb := to_jsonb(CASE TG_OP WHEN 'INSERT' THEN NEW ELSE OLD END);
    v_sign integer := CASE WHEN v_row ->> 'forgotten_at' IS NOT NULL THEN 0  -- the totals count live rows
                           WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    IF v_sign = 0 THEN
        RETURN NULL;
    END IF;
    PERFORM lock_writers(TG_ARGV[0]::regclass, ARRAY[v_row ->> TG_ARGV[1]]);
    EXECUTE format(
        'INSERT INTO %1$I AS t (%2$I, %3$I, terms) VALUES ($1, $2, $3)
         ON CONFLICT (%2$I) DO UPDATE SET %3$I = t.%3$I + EXCLUDED.%3$I, terms = t.terms + EXCLUDED.terms',
        TG_ARGV[0], TG_ARGV[1], TG_ARGV[2])
    USING v_row ->> TG_ARGV[1], v_sign, v_sign * (v_row ->> 'term_count')::bigint;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _count_terms_row() IS
    'Internal (row trigger, Citus): add an inserted or subtract a deleted live row and its terms to the totals.';

DO $distribute$
DECLARE
    r record;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'memories'::regclass) THEN
        RAISE NOTICE 'the schema is distributed already';
        RETURN;
    END IF;
    CREATE TEMP TABLE _triggers ON COMMIT DROP AS
        SELECT c.relname AS relation, t.tgname AS name, pg_get_triggerdef(t.oid) AS definition
        FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
        WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal;
    CREATE TEMP TABLE _policies ON COMMIT DROP AS
        SELECT c.relname AS relation, p.polname AS name, p.polpermissive AS permissive, p.polcmd AS command,
               p.polroles AS roles, pg_get_expr(p.polqual, p.polrelid) AS using_expr,
               pg_get_expr(p.polwithcheck, p.polrelid) AS check_expr
        FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid
        WHERE c.relnamespace = current_schema()::regnamespace;
    CREATE TEMP TABLE _secured ON COMMIT DROP AS
        SELECT c.relname AS relation, c.relforcerowsecurity AS forced
        FROM pg_class c
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND c.relrowsecurity;
    CREATE TEMP TABLE _foreign_keys ON COMMIT DROP AS
        SELECT conrelid::regclass::text AS relation, conname AS name, pg_get_constraintdef(oid) AS definition
        FROM pg_constraint
        WHERE contype = 'f' AND connamespace = current_schema()::regnamespace
          AND confrelid = 'embedding_models'::regclass;

    FOR r IN SELECT * FROM _triggers LOOP
        EXECUTE format('DROP TRIGGER %I ON %I', r.name, r.relation);
    END LOOP;
    FOR r IN SELECT * FROM _policies LOOP
        EXECUTE format('DROP POLICY %I ON %I', r.name, r.relation);
    END LOOP;
    FOR r IN SELECT * FROM _foreign_keys LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.relation, r.name);
    END LOOP;
    -- the rows a table already has are copied into its shards with COPY, which row-level
    -- security refuses: it is turned off for the copy and on again, on every shard, below
    FOR r IN SELECT * FROM _secured LOOP
        EXECUTE format('ALTER TABLE %I NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY', r.relation);
    END LOOP;

    PERFORM create_distributed_table('memories', 'user_id');
    PERFORM create_distributed_table(t, 'user_id', colocate_with => 'memories')
    FROM unnest(ARRAY['memory_text_totals', 'memory_term_counts', 'memory_sessions', 'session_terms',
                      'memory_contexts', 'working_memories', 'entities', 'mentions',
                      'relations', 'memory_accesses', 'retrieval_log', 'memory_embedding_queue']) AS t;
    PERFORM create_distributed_table('documents', 'namespace', colocate_with => 'memories');
    PERFORM create_distributed_table(t, 'namespace', colocate_with => 'documents')
    FROM unnest(ARRAY['chunks', 'chunk_text_totals', 'chunk_embedding_queue']) AS t;
    PERFORM create_reference_table(t)
    FROM unnest(ARRAY['embedding_models', 'embedding_cache', 'access_tokens', 'relation_types']) AS t;

    -- embedding_cache keeps no foreign key: between two reference tables it makes every insert
    -- lock embedding_models on every node, which the application role may not
    FOR r IN SELECT * FROM _foreign_keys WHERE relation::regclass <> 'embedding_cache'::regclass LOOP
        EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s', r.relation, r.name, r.definition);
    END LOOP;
    PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
    FOR r IN SELECT * FROM _triggers
             WHERE definition !~ 'REFERENCING (NEW|OLD) TABLE' AND name !~ '_(stat_changes|embedding_queue)'
               AND relation NOT IN ('stat_changes_pending') AND name !~ '^memories_session' LOOP
        EXECUTE r.definition;
    END LOOP;
    CREATE TRIGGER memories_totals_update AFTER UPDATE OF content, text_config, forgotten_at ON memories
        FOR EACH ROW WHEN (OLD.term_count IS DISTINCT FROM NEW.term_count
                           OR (OLD.forgotten_at IS NULL) <> (NEW.forgotten_at IS NULL))
        EXECUTE FUNCTION _recount_terms('memory_text_totals', 'user_id', 'memories');
    CREATE TRIGGER chunks_totals_update AFTER UPDATE OF content, text_config ON chunks FOR EACH ROW
        WHEN (OLD.term_count IS DISTINCT FROM NEW.term_count)
        EXECUTE FUNCTION _recount_terms('chunk_text_totals', 'namespace', 'chunks');
    CREATE TRIGGER memories_term_counts_update AFTER UPDATE OF content, text_config, forgotten_at ON memories
        FOR EACH ROW WHEN (OLD.lexemes IS DISTINCT FROM NEW.lexemes
                           OR (OLD.forgotten_at IS NULL) <> (NEW.forgotten_at IS NULL))
        EXECUTE FUNCTION _count_lexemes_row();
    CREATE TRIGGER memories_totals_rows AFTER INSERT OR DELETE ON memories
        FOR EACH ROW EXECUTE FUNCTION _count_terms_row('memory_text_totals', 'user_id', 'memories');
    CREATE TRIGGER memories_term_counts_rows AFTER INSERT OR DELETE ON memories
        FOR EACH ROW EXECUTE FUNCTION _count_lexemes_row();
    CREATE TRIGGER chunks_totals_rows AFTER INSERT OR DELETE ON chunks
        FOR EACH ROW EXECUTE FUNCTION _count_terms_row('chunk_text_totals', 'namespace', 'chunks');
    -- No step at commit keeps the context windows on a cluster: every user's search reads its
    -- windows from memories (sql/search.sql), as while a migration fills them.
    ALTER TABLE memory_text_totals ALTER COLUMN contexts_ready SET DEFAULT false;
    UPDATE memory_text_totals SET contexts_ready = false;
    DELETE FROM memory_contexts;
    FOR r IN SELECT * FROM _secured LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', r.relation);
        IF r.forced THEN
            EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', r.relation);
        END IF;
    END LOOP;
    FOR r IN SELECT * FROM _policies LOOP
        EXECUTE format('CREATE POLICY %I ON %I AS %s FOR %s TO %s USING (%s)%s', r.name, r.relation,
            CASE WHEN r.permissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END,
            CASE r.command WHEN '*' THEN 'ALL' WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT'
                           WHEN 'w' THEN 'UPDATE' ELSE 'DELETE' END,
            (SELECT string_agg(CASE WHEN x = 0 THEN 'PUBLIC' ELSE quote_ident(x::regrole::text) END, ', ')
             FROM unnest(r.roles) AS x),
            regexp_replace(coalesce(r.using_expr, 'true'), '\( SELECT (\w+)\(\) AS \w+\)', '\1()', 'g'),
            CASE WHEN r.check_expr IS NULL THEN ''
                 ELSE format(' WITH CHECK (%s)',
                             regexp_replace(r.check_expr, '\( SELECT (\w+)\(\) AS \w+\)', '\1()', 'g')) END);
    END LOOP;

END $distribute$;

-- The search and graph functions run on the worker that holds the user (or namespace): called
-- bare (SELECT f(...)), Citus delegates them there, the two searches even inside a transaction
-- block (force_delegation: every library call is one), so a search is one hop to one worker
-- instead of one per statement inside it. Run on every distribute, so that a schema distributed
-- before gets it too.
DO $functions$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT p.oid::regprocedure AS signature, CASE WHEN p.proargnames[1] = 'p_user_id' THEN 'memories'
                                                      ELSE 'documents' END AS colocated,
               p.proname IN ('search_memories', 'search_chunks') AS forced
        FROM pg_proc p
        WHERE p.pronamespace = current_schema()::regnamespace
          AND p.proname IN ('search_memories', 'memory_candidates', 'graph_memories', 'search_episodic',
                            'search_semantic', 'search_perceptual', 'search_chunks', 'fold_accesses', 'apply_decay')
    LOOP
        IF r.forced THEN
            PERFORM create_distributed_function(r.signature, '$1', colocate_with => r.colocated,
                                                force_delegation => true);
        ELSE
            PERFORM create_distributed_function(r.signature, '$1', colocate_with => r.colocated);
        END IF;
        -- a delegated call reads reference tables (embedding_models) and its own shard only
        EXECUTE format('ALTER FUNCTION %s SET citus.allow_nested_distributed_execution = on', r.signature);
    END LOOP;
    -- Citus plans no generic plan of a statement with parameters ("could not create distributed
    -- plan"): the memory search, generic on one server (its plan_cache_mode), plans each call here.
    ALTER FUNCTION search_memories(text, text, vector, text, integer, memory_filter, text, timestamptz, text[],
                                   text[], integer, timestamptz, timestamptz, text, text, integer, integer,
                                   double precision, uuid[], double precision[])
        SET plan_cache_mode = force_custom_plan;
END $functions$;
