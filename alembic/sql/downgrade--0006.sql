-- Down from revision 0006: vectors keep no fingerprint.
DROP TRIGGER IF EXISTS memories_vector_fingerprint ON memories;
DROP TRIGGER IF EXISTS chunks_vector_fingerprint ON chunks;
ALTER TABLE memories DROP COLUMN IF EXISTS embedded_hash;
ALTER TABLE chunks DROP COLUMN IF EXISTS embedded_hash;
