-- Revision 0005: a queued row's generation is drawn from one sequence that outlives every queue
-- row, so that no generation comes twice (a vector made of an older text never matches a newer
-- request, even after the row left the queue and came back). Idempotent: a schema that revision
-- 0001 made with this code has the sequence and the columns.
CREATE SEQUENCE IF NOT EXISTS embedding_generations;
SELECT setval('embedding_generations',
              greatest((SELECT max(generation) FROM memory_embedding_queue),
                       (SELECT max(generation) FROM chunk_embedding_queue), 1));
ALTER TABLE memory_embedding_queue ALTER COLUMN generation TYPE bigint,
                                   ALTER COLUMN generation SET DEFAULT nextval('embedding_generations');
ALTER TABLE chunk_embedding_queue ALTER COLUMN generation TYPE bigint,
                                  ALTER COLUMN generation SET DEFAULT nextval('embedding_generations');
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memory_embedding_queue', 'chunk_embedding_queue'] LOOP
        EXECUTE format('COMMENT ON COLUMN %I.generation IS %L', t,
                       'Drawn anew (embedding_generations) at every queueing of the row and every new text: '
                       'a vector is written for the generation it was made from, and no generation comes twice.');
    END LOOP;
END $$;
