-- The lexical indexes take new rows into a small pending list, and a statement that added
-- several rows merges the list when it ends.
--
-- Written through (revision 0012, fastupdate off), every lexeme of a row is put into the GIN tree
-- on its own: 0.4 ms of a RAG chunk's 1.3 ms insert (a Chinese chunk of 300 characters holds
-- about 100 lexemes), 0.04 ms of a memory's. With GIN's fast update a row's entries are appended
-- to the index's pending list and merged into the tree later, in bulk, grouped by key. Every
-- search reads the pending list in full (about 16 microseconds a page in the hybrid search of a
-- user of 1,000 memories), so:
--   * a statement that inserted more than one row merges the list when it ends (a statement
--     trigger); merging costs about twice what writing one row through does, so a single row's
--     entries stay in the list until then;
--   * the list is kept to 64 kB (8 pages; the insert that passes the limit merges it) instead of
--     the default 4 MB, which once made the search twice as slow after a bulk load until a vacuum
--     merged it.
-- On Citus the trigger is not made: shards run no trigger with a transition table
-- (sql/citus/distribute.sql drops them), and the shards' lists keep the 64 kB bound alone.
ALTER INDEX memories_user_lexemes SET (fastupdate = on, gin_pending_list_limit = 64);
ALTER INDEX chunks_namespace_lexemes SET (fastupdate = on, gin_pending_list_limit = 64);

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

DO $merge$
DECLARE
    v_distributed boolean := false;  -- a schema distributed over Citus before this revision
BEGIN
    IF to_regclass('pg_dist_partition') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = ANY ($1))'
        INTO v_distributed USING ARRAY['memories'::regclass, 'chunks'::regclass];
    END IF;
    IF NOT v_distributed THEN
        CREATE TRIGGER memories_merge_pending_terms AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
            FOR EACH STATEMENT EXECUTE FUNCTION _merge_pending_terms('memories_user_lexemes');
        CREATE TRIGGER chunks_merge_pending_terms AFTER INSERT ON chunks REFERENCING NEW TABLE AS new_rows
            FOR EACH STATEMENT EXECUTE FUNCTION _merge_pending_terms('chunks_namespace_lexemes');
    END IF;
END $merge$;
