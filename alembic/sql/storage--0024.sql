-- Revision 0024: a memory's row stays whole up to a page. PostgreSQL moves the largest values of a
-- row over about 2 kB to the TOAST table, and a 384-d vector (1,544 bytes) is the largest value of
-- most memories; every search that scores a candidate read it back from there (one TOAST index
-- lookup and a page a vector). With toast_tuple_target at its maximum, only rows longer than a
-- page are compressed or moved out. Rows already stored keep their TOASTed values until they are
-- rewritten (VACUUM FULL memories, pg_repack, or an update of the value).
ALTER TABLE memories SET (toast_tuple_target = 8160);
