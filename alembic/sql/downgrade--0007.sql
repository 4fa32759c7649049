-- Down from revision 0007: items never expire.
DROP INDEX IF EXISTS memories_expiring;
ALTER TABLE memories DROP COLUMN IF EXISTS expires_at;
