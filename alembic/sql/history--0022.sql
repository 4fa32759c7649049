-- Revision 0022: facts with two clocks. A long-term memory held in the world from created_at (its
-- event time) until valid_to, and was known to the store from recorded_at until superseded_at.
-- Replacing a fact keeps its earlier versions as rows of their own (version_of: the memory they
-- are a version of), retired from search (forgotten_at set, so no live index, count or search
-- sees them). Relations carry the same two clocks, and a relation type marked single_valued
-- (lives in, works at, married to) cannot hold two targets at once for one subject: an exclusion
-- constraint (btree_gist) says so, under concurrency too. Existing rows: valid since their time,
-- recorded at creation; overlapping single-valued relations are closed where the next one starts.

ALTER TABLE memories
    ADD COLUMN valid_to timestamptz,
    ADD COLUMN superseded_at timestamptz,
    ADD COLUMN version_of uuid,
    ADD CONSTRAINT memories_valid_period CHECK (valid_to IS NULL OR valid_to > created_at),
    ADD CONSTRAINT memories_known_period CHECK (superseded_at IS NULL OR superseded_at >= recorded_at),
    ADD CONSTRAINT memories_version_retired CHECK (version_of IS NULL OR forgotten_at IS NOT NULL);
COMMENT ON COLUMN memories.valid_to IS
    'When the fact stopped holding in the world (NULL: it still holds); it held from created_at.';
COMMENT ON COLUMN memories.superseded_at IS
    'When the store stopped believing this version (a correction or a later version); NULL: still believed.';
COMMENT ON COLUMN memories.version_of IS
    'The memory this row is an earlier version of; NULL for a memory itself (its current version).';
CREATE INDEX memories_user_versions ON memories (user_id, version_of) WHERE version_of IS NOT NULL;

CREATE TABLE relation_types (
    relation_type text PRIMARY KEY,
    single_valued boolean NOT NULL DEFAULT false,
    CONSTRAINT relation_types_not_blank CHECK (btrim(relation_type) <> '')
);
COMMENT ON TABLE relation_types IS
    'Relation types with a rule: single_valued ones hold one target at a time for a subject.';
INSERT INTO relation_types (relation_type, single_valued)
VALUES ('lives_in', true), ('works_at', true), ('married_to', true), ('居住于', true), ('工作于', true);
-- on a Citus coordinator whose tables are distributed, a copy on every node (a reference table,
-- as sql/citus/distribute.sql makes it on a schema distributed later)
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN  -- Citus's catalog exists
        IF EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'memories'::regclass) THEN
            PERFORM create_reference_table('relation_types');
        END IF;
    END IF;
END $$;
-- every role that reads relations reads the rules (grant --app and --analytics grant it from now on)
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT DISTINCT grantee FROM information_schema.role_table_grants
             WHERE table_schema = current_schema() AND table_name = 'relations' AND privilege_type = 'SELECT'
               AND grantee <> current_user
    LOOP
        EXECUTE format('GRANT SELECT ON relation_types TO %I', r.grantee);
    END LOOP;
END $$;

ALTER TABLE relations
    ADD COLUMN valid_from timestamptz,
    ADD COLUMN valid_to timestamptz,
    ADD COLUMN recorded_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN superseded_at timestamptz,
    ADD COLUMN single_valued boolean NOT NULL DEFAULT false;
UPDATE relations r
SET valid_from = m.created_at, recorded_at = r.created_at,
    single_valued = EXISTS (SELECT 1 FROM relation_types t WHERE t.relation_type = r.relation_type AND t.single_valued)
FROM memories m
WHERE m.user_id = r.user_id AND m.id = r.memory_id;
ALTER TABLE relations ALTER COLUMN valid_from SET DEFAULT now();
ALTER TABLE relations ALTER COLUMN valid_from SET NOT NULL;
ALTER TABLE relations
    ADD CONSTRAINT relations_valid_period CHECK (valid_to IS NULL OR valid_to > valid_from),
    ADD CONSTRAINT relations_known_period CHECK (superseded_at IS NULL OR superseded_at >= recorded_at);
COMMENT ON COLUMN relations.valid_from IS 'When the relation began to hold (its memory''s time).';
COMMENT ON COLUMN relations.valid_to IS 'When it stopped holding (NULL: it still holds).';
COMMENT ON COLUMN relations.recorded_at IS 'When the store learned it.';
COMMENT ON COLUMN relations.superseded_at IS 'When the store stopped believing it (NULL: still believed).';
COMMENT ON COLUMN relations.single_valued IS 'Its type holds one target at a time (relation_types).';

-- Existing single-valued relations: each ends where the subject's next one with another target
-- starts; of two that start at once with different targets, the one recorded first is retired.
-- (Correlated on user_id, so that Citus runs each on the user's shard; no now() inside a CASE.)
UPDATE relations r
SET valid_to = (SELECT min(n.valid_from) FROM relations n
                WHERE n.user_id = r.user_id AND n.source_id = r.source_id
                  AND n.relation_type = r.relation_type AND n.single_valued
                  AND n.target_id <> r.target_id AND n.valid_from > r.valid_from)
WHERE r.single_valued;
UPDATE relations r
SET superseded_at = greatest(now(), r.recorded_at)
WHERE r.single_valued
  AND EXISTS (SELECT 1 FROM relations n
              WHERE n.user_id = r.user_id AND n.source_id = r.source_id
                AND n.relation_type = r.relation_type AND n.single_valued
                AND n.target_id <> r.target_id AND n.valid_from = r.valid_from
                AND (n.recorded_at, n.memory_id) > (r.recorded_at, r.memory_id));

ALTER TABLE relations ADD CONSTRAINT relations_one_target_at_a_time
    EXCLUDE USING gist (user_id WITH =, source_id WITH =, relation_type WITH =, target_id WITH <>,
                        tstzrange(valid_from, valid_to) WITH &&)
    WHERE (single_valued AND superseded_at IS NULL);
COMMENT ON CONSTRAINT relations_one_target_at_a_time ON relations IS
    'A single-valued relation holds one target at a time for a subject, as far as the store now knows.';

-- Graph walks follow what holds now, as now known.
CREATE OR REPLACE VIEW relation_edges WITH (security_invoker = true) AS
    SELECT user_id, source_id AS from_id, target_id AS to_id, relation_type, memory_id, weight,
           'out'::text AS direction
    FROM relations
    WHERE superseded_at IS NULL AND (valid_to IS NULL OR valid_to > now())
    UNION ALL
    SELECT user_id, target_id, source_id, relation_type, memory_id, weight, 'in'
    FROM relations
    WHERE superseded_at IS NULL AND (valid_to IS NULL OR valid_to > now());
COMMENT ON VIEW relation_edges IS
    'Every relation that holds now, as now known, in both directions (from_id -> to_id), for '
    'undirected graph walks.';

-- The views that count memories count memories, not their earlier versions.
CREATE OR REPLACE VIEW memory_stats WITH (security_invoker = true) AS
SELECT m.user_id, m.memory_type,
       count(*) FILTER (WHERE m.forgotten_at IS NULL) AS live,
       count(*) FILTER (WHERE m.forgotten_at IS NOT NULL) AS forgotten,
       round((count(*) FILTER (WHERE m.forgotten_at IS NOT NULL))::numeric / count(*), 3) AS forgotten_share,
       round(avg(m.importance) FILTER (WHERE m.forgotten_at IS NULL)::numeric, 3) AS avg_importance,
       min(m.created_at) FILTER (WHERE m.forgotten_at IS NULL) AS oldest,
       max(m.created_at) FILTER (WHERE m.forgotten_at IS NULL) AS newest,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM now() - m.created_at) / 86400)
              FILTER (WHERE m.forgotten_at IS NULL))::numeric, 1) AS median_age_days,
       sum((m.access_count + coalesce(p.accesses, 0))::integer) FILTER (WHERE m.forgotten_at IS NULL) AS accesses,
       count(*) FILTER (WHERE m.forgotten_at IS NULL AND m.access_count = 0 AND p.accesses IS NULL)
           AS never_accessed
FROM memories m
LEFT JOIN pending_accesses p ON p.user_id = m.user_id AND p.memory_id = m.id
WHERE m.version_of IS NULL
GROUP BY m.user_id, m.memory_type
UNION ALL
SELECT user_id, 'working',
       count(*) FILTER (WHERE expires_at > now()), count(*) FILTER (WHERE expires_at <= now()),
       round((count(*) FILTER (WHERE expires_at <= now()))::numeric / count(*), 3),
       round(avg(importance) FILTER (WHERE expires_at > now())::numeric, 3),
       min(created_at) FILTER (WHERE expires_at > now()), max(created_at) FILTER (WHERE expires_at > now()),
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM now() - created_at) / 86400)
              FILTER (WHERE expires_at > now()))::numeric, 1),
       NULL, NULL
FROM working_memories
GROUP BY user_id;

-- Every version of every memory with both clocks, and the current truth as now known.
CREATE VIEW memory_history WITH (security_invoker = true) AS
SELECT m.user_id, coalesce(m.version_of, m.id) AS memory_id, m.id AS version_id, m.memory_type,
       m.content, m.importance, m.session_id, m.created_at AS valid_from, m.valid_to, m.recorded_at,
       m.superseded_at, m.forgotten_at, m.version_of IS NULL AS is_current_row, m.metadata
FROM memories m;
COMMENT ON VIEW memory_history IS
    'Every version of every long-term memory with its valid period (valid_from, valid_to) and its '
    'recorded period (recorded_at, superseded_at); memory_id names the memory, version_id the row.';

CREATE VIEW current_facts WITH (security_invoker = true) AS
SELECT m.user_id, m.id AS memory_id, m.memory_type, m.content, m.importance, m.session_id,
       m.created_at AS valid_from, m.recorded_at
FROM memories m
WHERE m.forgotten_at IS NULL AND m.superseded_at IS NULL AND (m.valid_to IS NULL OR m.valid_to > now());
COMMENT ON VIEW current_facts IS 'The long-term memories that hold now, as now known (what a search sees).';
