-- Row-level security: whose rows a session sees, and the graph's rows read through Cypher.
-- Applied by every migration in which this file changed (sql/README.md); tests/test_sql_live.py
-- holds it equal to a migrated database.

CREATE OR REPLACE FUNCTION all_rows_requested() RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT coalesce(current_setting('pgmem.all_rows', true), '') = 'on' $$;
COMMENT ON FUNCTION all_rows_requested() IS
    'Whether this session asked for every user''s rows (SET pgmem.all_rows = on); only roles named '
    'by the all_rows policies get them.';

CREATE OR REPLACE FUNCTION current_memory_user() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT nullif(current_setting('pgmem.user_id', true), '') $$;
COMMENT ON FUNCTION current_memory_user() IS
    'The user this transaction works for (setting pgmem.user_id), NULL when none is set.';

CREATE OR REPLACE FUNCTION current_rag_namespace() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT nullif(current_setting('pgmem.namespace', true), '') $$;
COMMENT ON FUNCTION current_rag_namespace() IS
    'The RAG namespace this transaction works in (setting pgmem.namespace), NULL when none is set.';

-- The policy's test, a function the planner does not inline: it then estimates a third of a
-- label's rows visible and joins labels by hashing. The containment operator written in the
-- policy itself was estimated at 0.1 % of the rows, and multi-hop patterns became nested loops
-- over whole labels (an undirected two-hop query on a 3,000-vertex graph: 18 s, against 2.9 s
-- with this function and 2.0 s without any policy). Polymorphic, so that it can be created
-- where AGE is not installed.
CREATE OR REPLACE FUNCTION cypher_row_visible(properties anyelement) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path FROM CURRENT
AS $$ SELECT properties OPERATOR(ag_catalog.@>) ag_catalog.agtype_build_map('user_id', current_memory_user()) $$;
COMMENT ON FUNCTION cypher_row_visible(anyelement) IS
    'Whether a vertex or edge of the AGE graph (its properties) belongs to the transaction''s user: '
    'the Cypher read role''s policy.';

CREATE OR REPLACE FUNCTION graph_reader_ready(graph_name name, reader name) RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
DECLARE
    reader_oid oid := (SELECT oid FROM pg_roles WHERE rolname = reader);
BEGIN
    IF reader_oid IS NULL OR to_regclass('ag_catalog.ag_label') IS NULL THEN
        RETURN false;
    END IF;
    RETURN NOT EXISTS (
        SELECT 1
        FROM ag_catalog.ag_label l
        JOIN ag_catalog.ag_graph g ON g.graphid = l.graph
        JOIN pg_class c ON c.oid = l.relation
        WHERE g.name = graph_name
          AND NOT (c.relrowsecurity AND EXISTS (
              SELECT 1 FROM pg_policy p
              WHERE p.polrelid = c.oid AND p.polname = 'cypher_reader_scope'
                AND NOT p.polpermissive AND reader_oid = ANY (p.polroles))));
END
$$;
COMMENT ON FUNCTION graph_reader_ready(name, name) IS
    'Whether the Cypher read role exists and every label table of the graph carries its '
    'restrictive policy: the passthrough runs only then.';

CREATE OR REPLACE FUNCTION secure_graph(graph_name name, reader name) RETURNS integer
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    label regclass;
    secured integer := 0;
BEGIN
    FOR label IN
        SELECT l.relation FROM ag_catalog.ag_label l JOIN ag_catalog.ag_graph g ON g.graphid = l.graph
        WHERE g.name = graph_name ORDER BY l.id
    LOOP
        EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', label);
        EXECUTE format('DROP POLICY IF EXISTS graph_rows ON %s', label);
        EXECUTE format('CREATE POLICY graph_rows ON %s USING (true) WITH CHECK (true)', label);
        EXECUTE format('DROP POLICY IF EXISTS cypher_reader_scope ON %s', label);
        IF reader IS NOT NULL THEN
            EXECUTE format(
                'CREATE POLICY cypher_reader_scope ON %s AS RESTRICTIVE TO %I '
                'USING (%I.cypher_row_visible(properties))',
                label, reader, current_schema());
        END IF;
        secured := secured + 1;
    END LOOP;
    RETURN secured;
END
$$;
COMMENT ON FUNCTION secure_graph(name, name) IS
    'Enables row-level security on every label table of the AGE graph: all rows for the library, '
    'only the transaction''s user for the Cypher read role; returns how many tables. Idempotent.';
REVOKE ALL ON FUNCTION secure_graph(name, name) FROM PUBLIC;
