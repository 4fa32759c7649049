-- Undo revision 0016: the label tables of the graph named by the setting pgmem.graph (set by the
-- migration) lose their policies and row-level security, and the two functions go. The read role,
-- made by "hello-pgmem grant", is left to the DBA.
DO $$
DECLARE
    label regclass;
BEGIN
    IF to_regclass('ag_catalog.ag_label') IS NULL THEN
        RETURN;
    END IF;
    FOR label IN
        SELECT l.relation FROM ag_catalog.ag_label l JOIN ag_catalog.ag_graph g ON g.graphid = l.graph
        WHERE g.name = current_setting('pgmem.graph', true)
    LOOP
        EXECUTE format('DROP POLICY IF EXISTS cypher_reader_scope ON %s', label);
        EXECUTE format('DROP POLICY IF EXISTS graph_rows ON %s', label);
        EXECUTE format('ALTER TABLE %s DISABLE ROW LEVEL SECURITY', label);
    END LOOP;
END
$$;
DROP FUNCTION graph_reader_ready(name, name);
DROP FUNCTION secure_graph(name, name);
DROP FUNCTION cypher_row_visible(anyelement);
