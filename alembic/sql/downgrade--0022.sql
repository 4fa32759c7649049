-- Undo revision 0022: the functions, views, constraint, columns and table of the two clocks
-- dropped; relation_edges and memory_stats as revision 0010 left them. Earlier versions of
-- memories (rows with version_of) are deleted first: without the clocks they would read as
-- forgotten memories.

DROP FUNCTION search_memories_as_of(text, text, vector, text, integer, text[], timestamptz, timestamptz, double precision);
DROP FUNCTION relations_as_of(text, timestamptz, timestamptz);
DROP FUNCTION memories_as_of(text, timestamptz, timestamptz);
DROP FUNCTION memory_as_of(timestamptz, timestamptz, timestamptz, timestamptz, timestamptz, uuid, timestamptz, timestamptz);
DROP FUNCTION holds_as_of(timestamptz, timestamptz, timestamptz, timestamptz, timestamptz, timestamptz);
DROP VIEW current_facts;
DROP VIEW memory_history;

CREATE OR REPLACE VIEW relation_edges WITH (security_invoker = true) AS
    SELECT user_id, source_id AS from_id, target_id AS to_id, relation_type, memory_id, weight,
           'out'::text AS direction
    FROM relations
    UNION ALL
    SELECT user_id, target_id, source_id, relation_type, memory_id, weight, 'in'
    FROM relations;
COMMENT ON VIEW relation_edges IS
    'Every relation in both directions (from_id -> to_id), for undirected graph walks.';

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

DELETE FROM relations WHERE superseded_at IS NOT NULL OR valid_to IS NOT NULL;
DELETE FROM memories WHERE version_of IS NOT NULL;
ALTER TABLE relations DROP CONSTRAINT relations_one_target_at_a_time;
ALTER TABLE relations
    DROP COLUMN valid_from, DROP COLUMN valid_to, DROP COLUMN recorded_at, DROP COLUMN superseded_at,
    DROP COLUMN single_valued;
DROP TABLE relation_types;
DROP INDEX memories_user_versions;
ALTER TABLE memories DROP COLUMN valid_to, DROP COLUMN superseded_at, DROP COLUMN version_of;
