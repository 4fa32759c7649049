-- Revision 0006: each vector keeps the fingerprint of the text it was made of (embedded_hash),
-- so that hello-pgmem check finds a vector that is not of its row's text. Idempotent: a schema
-- that revision 0001 made with this code has the columns. The triggers run after the files of
-- sql/ (their function, _fingerprint_vector, is in sql/embedding_queue.sql). Vectors written
-- before it keep no fingerprint.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS embedded_hash bytea;
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS embedded_hash bytea;
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'chunks'] LOOP
        EXECUTE format('COMMENT ON COLUMN %I.embedded_hash IS %L', t,
                       'The fingerprint of the text the vector was made of (vector_fingerprint: sha256 of the text, a '
                       'chunk''s after its heading path), written with the vector: hello-pgmem check finds a vector '
                       'that is not of its row''s text. NULL without a vector, for a perceptual memory''s, and for '
                       'vectors written before revision 0006 or on a Citus cluster.');
    END LOOP;
END $$;
