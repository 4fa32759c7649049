-- Down from revision 0005: generations count per row again.
ALTER TABLE memory_embedding_queue ALTER COLUMN generation SET DEFAULT 1,
                                   ALTER COLUMN generation TYPE integer USING least(generation, 2147483647);
ALTER TABLE chunk_embedding_queue ALTER COLUMN generation SET DEFAULT 1,
                                  ALTER COLUMN generation TYPE integer USING least(generation, 2147483647);
DROP SEQUENCE IF EXISTS embedding_generations;
