-- Revision 0019: memories keep the order they were added in. seq takes the next number of
-- memories_seq on insert, so a batch's rows take it in their order and the memories of a session
-- keep the order of the turns even when they share one time (a chat log imported with one date per
-- session, a batch given no times). Existing rows are numbered per user by (created_at, id), below
-- every number the sequence gives from now on. A sequence default, not an identity column: Citus
-- distributes the one, not an identity added to a table with rows; and the column is added before
-- its default, as Citus asks for a table that has rows.

CREATE SEQUENCE memories_seq AS bigint;
ALTER TABLE memories ADD COLUMN seq bigint;
UPDATE memories m SET seq = o.n
FROM (SELECT user_id, id, row_number() OVER (PARTITION BY user_id ORDER BY created_at, id) AS n
      FROM memories) AS o
WHERE m.user_id = o.user_id AND m.id = o.id;
SELECT setval('memories_seq', greatest(1, (SELECT count(*) FROM memories)));
ALTER TABLE memories ALTER COLUMN seq SET DEFAULT nextval('memories_seq');
ALTER TABLE memories ALTER COLUMN seq SET NOT NULL;
ALTER SEQUENCE memories_seq OWNED BY memories.seq;
-- every role that may add memories may take the next number (grant --app grants it from now on)
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT DISTINCT grantee FROM information_schema.role_table_grants
             WHERE table_schema = current_schema() AND table_name = 'memories' AND privilege_type = 'INSERT'
               AND grantee <> current_user
    LOOP
        EXECUTE format('GRANT USAGE ON SEQUENCE memories_seq TO %I', r.grantee);
    END LOOP;
END $$;
-- a session's memories in order: the neighbours of a search candidate
CREATE INDEX memories_user_session_order ON memories (user_id, session_id, created_at, seq);
DROP INDEX memories_user_session;
COMMENT ON COLUMN memories.seq IS
    'The order the memory was added in (memories_seq; a batch''s rows in their order): a session''s '
    'memories with equal created_at are ordered by it.';
