"""Every statement on the knowledge-graph tables (entities, mentions, relations): the family's owner.

Each names the user; the graph walks of search are SQL functions in ``sql/`` (graph_memories).
"""

from __future__ import annotations

# One statement: insert new entities, give MISC ones a better type, report which were new and
# which changed type (``before`` sees the rows as they were before the upsert).
UPSERT_ENTITIES = """
WITH input AS (
    SELECT * FROM unnest(%(names)s::text[], %(norms)s::text[], %(types)s::text[])
        AS n(name, name_norm, entity_type)
), before AS (
    SELECT name_norm, entity_type FROM entities
    WHERE user_id = %(user_id)s AND name_norm IN (SELECT name_norm FROM input)
), up AS (
    INSERT INTO entities AS e (user_id, id, name, name_norm, entity_type)
    SELECT %(user_id)s, gen_random_uuid(), name, name_norm, entity_type FROM input
    ORDER BY name_norm  -- one lock order for every writer: concurrent adds cannot deadlock here
    ON CONFLICT (user_id, name_norm) DO UPDATE
    SET entity_type = CASE WHEN e.entity_type = 'MISC' THEN EXCLUDED.entity_type ELSE e.entity_type END,
        updated_at = EXCLUDED.updated_at
    RETURNING e.id, e.name, e.name_norm, e.entity_type, (xmax = 0) AS inserted
)
SELECT up.id, up.name, up.name_norm, up.entity_type, up.inserted,
       NOT up.inserted AND before.entity_type IS DISTINCT FROM up.entity_type AS retyped
FROM up LEFT JOIN before USING (name_norm)
"""

INSERT_MENTIONS = """
INSERT INTO mentions (user_id, memory_id, entity_id)
SELECT %(user_id)s, %(memory_id)s, unnest(%(entity_ids)s::uuid[])
ON CONFLICT DO NOTHING
"""

# A relation holds from its memory's time. A single-valued one (its type so marked in
# relation_types, and the only target the memory gives its subject for that type) first closes the
# subject's relation of that type to another target that still holds then: it ends where the new
# one starts, or is retired when it starts at the same time (the later statement wins); the new
# one ends where a later one already starts. The exclusion constraint relations_one_target_at_a_time
# holds the rest, concurrent writers included.
_RELATION_INPUT = """
mem AS (SELECT created_at FROM memories WHERE user_id = %(user_id)s AND id = %(memory_id)s),
given AS (
    SELECT * FROM unnest(%(sources)s::uuid[], %(types)s::text[], %(targets)s::uuid[])
        AS x(source_id, relation_type, target_id)
),
input AS (
    SELECT DISTINCT g.source_id, g.relation_type, g.target_id,
           coalesce(t.single_valued, false)
           AND (SELECT count(DISTINCT o.target_id) FROM given o
                WHERE o.source_id = g.source_id AND o.relation_type = g.relation_type) = 1 AS single
    FROM given g LEFT JOIN relation_types t ON t.relation_type = g.relation_type
)"""

_CONFLICTING = """
FROM input new, mem
WHERE new.single AND r.user_id = %(user_id)s AND r.source_id = new.source_id
  AND r.relation_type = new.relation_type AND r.target_id <> new.target_id AND r.single_valued
  AND r.superseded_at IS NULL AND (r.valid_to IS NULL OR r.valid_to > mem.created_at)"""

# Two statements rather than a CASE: Citus evaluates no STABLE function (now()) inside a CASE of a
# modification.
CLOSE_SINGLE_VALUED = f"""
WITH {_RELATION_INPUT}
UPDATE relations r SET valid_to = mem.created_at
{_CONFLICTING} AND r.valid_from < mem.created_at
"""

RETIRE_SAME_START = f"""
WITH {_RELATION_INPUT}
UPDATE relations r SET superseded_at = greatest(now(), r.recorded_at)
{_CONFLICTING} AND r.valid_from = mem.created_at
"""

INSERT_RELATIONS = f"""
WITH {_RELATION_INPUT}
INSERT INTO relations AS r (user_id, source_id, relation_type, target_id, memory_id, valid_from, valid_to,
                            single_valued)
SELECT %(user_id)s, x.source_id, x.relation_type, x.target_id, %(memory_id)s, mem.created_at,
       CASE WHEN x.single THEN (
           SELECT min(o.valid_from) FROM relations o
           WHERE o.user_id = %(user_id)s AND o.source_id = x.source_id AND o.relation_type = x.relation_type
             AND o.target_id <> x.target_id AND o.single_valued AND o.superseded_at IS NULL
             AND o.valid_from > mem.created_at) END,
       x.single
FROM input x, mem
ON CONFLICT (user_id, source_id, relation_type, target_id, memory_id) DO UPDATE
SET weight = r.weight + 1, updated_at = EXCLUDED.updated_at
"""

MENTIONED_BY = """
SELECT DISTINCT entity_id FROM mentions WHERE user_id = %(user_id)s AND memory_id = ANY(%(memory_ids)s)
"""
UNLINK = """
WITH r AS (DELETE FROM relations WHERE user_id = %(user_id)s AND memory_id = ANY(%(memory_ids)s))
DELETE FROM mentions WHERE user_id = %(user_id)s AND memory_id = ANY(%(memory_ids)s)
"""
DELETE_ORPHANS = """
DELETE FROM entities e
WHERE e.user_id = %(user_id)s AND e.id = ANY(%(entity_ids)s)
  AND NOT EXISTS (SELECT 1 FROM mentions m WHERE m.user_id = e.user_id AND m.entity_id = e.id)
RETURNING e.id
"""

# The relations that held at valid_at as known at known_at (each now when not given), in both
# directions: what relation_edges is for now, as now known.
EDGES_AS_OF = """(
    SELECT user_id, source_id AS from_id, target_id AS to_id, relation_type, weight, 'out' AS direction
    FROM relations
    WHERE holds_as_of(valid_from, valid_to, recorded_at, superseded_at,
                      coalesce(%(valid_at)s::timestamptz, now()), coalesce(%(known_at)s::timestamptz, now()))
    UNION ALL
    SELECT user_id, target_id, source_id, relation_type, weight, 'in'
    FROM relations
    WHERE holds_as_of(valid_from, valid_to, recorded_at, superseded_at,
                      coalesce(%(valid_at)s::timestamptz, now()), coalesce(%(known_at)s::timestamptz, now()))
)"""

NEIGHBOURHOOD = f"""
WITH RECURSIVE walk (entity_id, hops) AS (
    SELECT e.id, 0 FROM entities e WHERE e.user_id = %(user_id)s AND e.name_norm = %(name)s
    UNION
    SELECT r.to_id, w.hops + 1 FROM walk w
    JOIN {EDGES_AS_OF} r ON r.user_id = %(user_id)s AND r.from_id = w.entity_id
    WHERE w.hops < %(depth)s
), reached AS (SELECT entity_id, min(hops) AS hops FROM walk GROUP BY entity_id LIMIT %(max_entities)s)
SELECT e.name, e.entity_type, r.hops FROM reached r
JOIN entities e ON e.user_id = %(user_id)s AND e.id = r.entity_id
ORDER BY r.hops, e.name
"""

NEIGHBOURHOOD_RELATIONS = """
SELECT s.name, r.relation_type, t.name, sum(r.weight)
FROM relations r
JOIN entities s ON s.user_id = r.user_id AND s.id = r.source_id
JOIN entities t ON t.user_id = r.user_id AND t.id = r.target_id
WHERE r.user_id = %(user_id)s AND s.name_norm = ANY(%(names)s) AND t.name_norm = ANY(%(names)s)
  AND holds_as_of(r.valid_from, r.valid_to, r.recorded_at, r.superseded_at,
                      coalesce(%(valid_at)s::timestamptz, now()), coalesce(%(known_at)s::timestamptz, now()))
GROUP BY 1, 2, 3
ORDER BY 4 DESC, 1, 2, 3
"""

ENTITY_IDS = "SELECT id FROM entities WHERE user_id = %(user_id)s AND name_norm = %(name)s ORDER BY id"

PATH_STEP = f"""
SELECT DISTINCT ON (r.to_id) r.to_id, r.from_id, r.relation_type || '|' || r.direction
FROM {EDGES_AS_OF} r
WHERE r.user_id = %(user_id)s AND r.from_id = ANY(%(frontier)s::uuid[])
  AND NOT EXISTS (SELECT 1 FROM unnest(%(visited)s::uuid[]) AS v(id) WHERE v.id = r.to_id)
ORDER BY r.to_id, r.from_id, 3
"""
"""One level of a breadth-first search: the entities first reached from the frontier, each with
the entity and relation it was reached by (the visited ones are never walked again)."""

ENTITY_NAMES = "SELECT id, name FROM entities WHERE user_id = %(user_id)s AND id = ANY(%(ids)s)"

ENTITIES_OF = """
SELECT e.name, e.entity_type FROM mentions m
JOIN entities e ON e.user_id = m.user_id AND e.id = m.entity_id
WHERE m.user_id = %(user_id)s AND m.memory_id = %(memory_id)s
ORDER BY e.name
"""

MEMORIES_ABOUT = """
SELECT mem.id, mem.memory_type, mem.content, mem.importance, mem.session_id, mem.modality,
       mem.metadata, mem.created_at
FROM entities e
JOIN mentions m ON m.user_id = e.user_id AND m.entity_id = e.id
JOIN memories mem ON mem.user_id = m.user_id AND mem.id = m.memory_id AND mem.forgotten_at IS NULL
WHERE e.user_id = %(user_id)s AND e.name_norm = %(name)s
ORDER BY mem.importance DESC, mem.created_at DESC
LIMIT %(limit)s
"""

MEMORIES_ABOUT_AS_OF = """
SELECT coalesce(mem.version_of, mem.id), mem.memory_type, mem.content, mem.importance, mem.session_id,
       mem.modality, mem.metadata, mem.created_at
FROM entities e
JOIN mentions m ON m.user_id = e.user_id AND m.entity_id = e.id
JOIN memories mem ON mem.user_id = m.user_id AND mem.id = m.memory_id
WHERE e.user_id = %(user_id)s AND e.name_norm = %(name)s
  AND memory_as_of(mem.created_at, mem.valid_to, mem.recorded_at, mem.superseded_at, mem.forgotten_at,
                   mem.version_of, coalesce(%(valid_at)s, now()), coalesce(%(known_at)s, now()))
ORDER BY mem.importance DESC, mem.created_at DESC
LIMIT %(limit)s
"""
"""The memories that mention an entity as they held at a time, as the store knew them at another
(each version by the id of the memory it is a version of)."""

KNOWN_NAMES = """
SELECT name FROM entities WHERE user_id = %(user_id)s AND name_norm = ANY(%(names)s)
ORDER BY length(name_norm) DESC LIMIT %(limit)s
"""

# The live memories with a relation of the same source and type as one of the given relations
# but another target (张三 —居住于→ 北京, then 张三 —居住于→ 上海).
CONFLICTS = """
SELECT DISTINCT r.memory_id
FROM relations r
JOIN entities s ON s.user_id = r.user_id AND s.id = r.source_id
JOIN entities t ON t.user_id = r.user_id AND t.id = r.target_id
JOIN memories m ON m.user_id = r.user_id AND m.id = r.memory_id AND m.forgotten_at IS NULL
WHERE r.user_id = %(user_id)s AND r.superseded_at IS NULL AND (r.valid_to IS NULL OR r.valid_to > now())
  AND (s.name_norm, r.relation_type) IN (
    SELECT * FROM unnest(%(sources)s::text[], %(types)s::text[]))
  AND NOT (s.name_norm, r.relation_type, t.name_norm) IN (
    SELECT * FROM unnest(%(sources)s::text[], %(types)s::text[], %(targets)s::text[]))
"""

CLEAR_USER = "DELETE FROM entities WHERE user_id = %(user_id)s"

LINK_COUNTS = """
SELECT (SELECT count(*) FROM mentions WHERE user_id = %(user_id)s),
       (SELECT count(*) FROM relations WHERE user_id = %(user_id)s)
"""

ALL_ENTITIES = "SELECT id::text, name, entity_type FROM entities WHERE user_id = %(user_id)s ORDER BY id"
# The AGE projection mirrors the memories themselves, not their earlier versions.
ALL_MENTIONS = """
SELECT n.memory_id::text, n.entity_id::text FROM mentions n
JOIN memories m ON m.user_id = n.user_id AND m.id = n.memory_id AND m.version_of IS NULL
WHERE n.user_id = %(user_id)s
"""
ALL_RELATIONS = """
SELECT r.memory_id::text, r.source_id::text, r.relation_type, r.target_id::text FROM relations r
JOIN memories m ON m.user_id = r.user_id AND m.id = r.memory_id AND m.version_of IS NULL
WHERE r.user_id = %(user_id)s
"""
