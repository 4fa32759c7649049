-- Undo revision 0014: the term counts and their triggers go; the migration then runs
-- search--0012.sql again, which restores search_memories as revision 0012 defined it. On a schema
-- distributed over Citus the statements run one by one (Citus propagates a DDL statement by its
-- text), over one connection per node, with unsafe triggers allowed (these settings last for the
-- transaction; elsewhere they are placeholders).
DO $downgrade$
BEGIN
    PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
    PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
    DROP TRIGGER IF EXISTS memories_term_counts_insert ON memories;
    DROP TRIGGER IF EXISTS memories_term_counts_delete ON memories;
    DROP TRIGGER IF EXISTS memories_term_counts_rows ON memories;
    DROP TRIGGER memories_term_counts_update ON memories;
    DROP TRIGGER memories_term_counts_truncate ON memories;
    DROP FUNCTION _count_lexemes();
    DROP FUNCTION _count_lexemes_row();
    DROP TABLE memory_term_counts;
END $downgrade$;
