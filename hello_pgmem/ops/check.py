"""``hello-pgmem check``: verify the store's invariants across every user; report each violation.

Foreign keys and row-level security keep most of these true by construction; the checker looks
anyway, because a restore with triggers disabled, a hand-written fix or an AGE write outside the
library can break them. It reads with ``pgmem.all_rows``, so it runs as the owner or a superuser.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from psycopg import sql

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.db import Database
from hello_pgmem.memory import MemoryManager

SAMPLE = 5  # rows shown per violation

EMBEDDINGS = """
SELECT m.user_id || '/' || m.id FROM memories m
LEFT JOIN embedding_models e ON e.model = m.embedding_model
WHERE m.forgotten_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM memory_embedding_queue q WHERE q.user_id = m.user_id AND q.memory_id = m.id)
  AND (m.embedding IS NULL OR e.model IS NULL OR vector_dims(m.embedding) <> e.dimension
       OR (%(model)s::text IS NOT NULL
           AND %(model)s NOT IN (m.embedding_model, coalesce(m.text_embedding_model, ''))))
ORDER BY 1
"""
CHUNK_EMBEDDINGS = """
SELECT c.namespace || '/' || c.document_id || '#' || c.position FROM chunks c
WHERE c.embedding IS NULL
  AND NOT EXISTS (SELECT 1 FROM chunk_embedding_queue q WHERE q.namespace = c.namespace AND q.chunk_id = c.id)
ORDER BY 1
"""
# A vector is of its row's text: the fingerprint kept with it (embedded_hash) is the text's. Rows
# that wait in the queue are left out (their new vector is on its way), as are vectors without a
# fingerprint (written before revision 0006, a perceptual memory's, a cluster's).
STALE_VECTORS = {
    "memory": """
SELECT 'memory ' || m.user_id || '/' || m.id, m.user_id, m.id FROM memories m
WHERE m.forgotten_at IS NULL AND m.embedded_hash IS NOT NULL
  AND m.embedded_hash <> vector_fingerprint(m.content)
  AND NOT EXISTS (SELECT 1 FROM memory_embedding_queue q WHERE q.user_id = m.user_id AND q.memory_id = m.id)
""",
    "chunk": """
SELECT 'chunk ' || c.namespace || '/' || c.id, c.namespace, c.id FROM chunks c
WHERE c.embedded_hash IS NOT NULL AND c.embedded_hash <> vector_fingerprint(c.content, c.heading_path)
  AND NOT EXISTS (SELECT 1 FROM chunk_embedding_queue q WHERE q.namespace = c.namespace AND q.chunk_id = c.id)
""",
}
STALE_VECTOR_ROWS = (
    f"SELECT label FROM ({STALE_VECTORS['memory']} UNION ALL {STALE_VECTORS['chunk']})"
    " AS s(label, scope, id) ORDER BY 1"
)
# A repair takes the stale vector away and queues the row for the vector of its text (a memory
# is queued by its own trigger; a chunk here).
REQUEUE_MEMORIES = f"""
UPDATE memories m SET embedding = NULL, embedding_model = NULL
FROM ({STALE_VECTORS["memory"]}) AS s(label, user_id, id)
WHERE m.user_id = s.user_id AND m.id = s.id
"""
REQUEUE_CHUNKS = f"""
WITH stale AS (
    UPDATE chunks c SET embedding = NULL, embedding_model = NULL
    FROM ({STALE_VECTORS["chunk"]}) AS s(label, namespace, id)
    WHERE c.namespace = s.namespace AND c.id = s.id
    RETURNING c.namespace, c.id
), queued AS (
    INSERT INTO chunk_embedding_queue (namespace, chunk_id)
    SELECT namespace, id FROM stale ORDER BY 1, 2
    ON CONFLICT (namespace, chunk_id) DO NOTHING
    RETURNING 1
)
SELECT count(*), pg_notify(embedding_queue_channel(), '') FROM queued
"""
QUEUED_WITH_VECTOR = """
SELECT 'memory ' || q.user_id || '/' || q.memory_id FROM memory_embedding_queue q
JOIN memories m ON m.user_id = q.user_id AND m.id = q.memory_id
WHERE m.embedding IS NOT NULL AND m.embedding_model IS NOT DISTINCT FROM coalesce(q.model, m.embedding_model)
UNION ALL
SELECT 'chunk ' || q.namespace || '/' || q.chunk_id FROM chunk_embedding_queue q
JOIN chunks c ON c.namespace = q.namespace AND c.id = q.chunk_id
WHERE c.embedding IS NOT NULL AND c.embedding_model IS NOT DISTINCT FROM coalesce(q.model, c.embedding_model)
ORDER BY 1
"""
TOTALS = """
SELECT coalesce(t.user_id, m.user_id) || ' counted ' || concat_ws('/', t.memories, t.terms, t.sessions,
       t.session_terms) || ', holds ' || concat_ws('/', m.memories, m.terms, m.sessions, m.session_terms)
FROM memory_text_totals t
FULL JOIN (SELECT r.user_id, count(*) AS memories, sum(r.term_count) AS terms,
                  count(DISTINCT r.session_id) AS sessions,
                  coalesce(sum(r.term_count) FILTER (WHERE r.session_id IS NOT NULL), 0) AS session_terms
           FROM memories r WHERE r.forgotten_at IS NULL GROUP BY 1) m ON m.user_id = t.user_id
WHERE (coalesce(t.memories, 0), coalesce(t.terms, 0))
      IS DISTINCT FROM (coalesce(m.memories, 0), coalesce(m.terms, 0))
   OR %(sessions)s AND (coalesce(t.sessions, 0), coalesce(t.session_terms, 0))
                       IS DISTINCT FROM (coalesce(m.sessions, 0), coalesce(m.session_terms, 0))
UNION ALL
SELECT coalesce(t.namespace, c.namespace) || ' counted ' || concat_ws('/', t.chunks, t.terms)
       || ', holds ' || concat_ws('/', c.chunks, c.terms)
FROM chunk_text_totals t
FULL JOIN (SELECT r.namespace, count(*) AS chunks, sum(r.term_count) AS terms FROM chunks r GROUP BY 1) c
  ON c.namespace = t.namespace
WHERE (coalesce(t.chunks, 0), coalesce(t.terms, 0))
      IS DISTINCT FROM (coalesce(c.chunks, 0), coalesce(c.terms, 0))
ORDER BY 1
"""
ORPHAN_ENTITIES = "SELECT user_id || '/' || name FROM graph_orphans ORDER BY 1"
ORPHAN_MENTIONS = """
SELECT n.user_id || '/' || n.memory_id || '->' || n.entity_id FROM mentions n
WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.user_id = n.user_id AND m.id = n.memory_id)
   OR NOT EXISTS (SELECT 1 FROM entities e WHERE e.user_id = n.user_id AND e.id = n.entity_id)
ORDER BY 1
"""
ORPHAN_RELATIONS = """
SELECT r.user_id || '/' || r.source_id || '-' || r.relation_type || '->' || r.target_id FROM relations r
WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.user_id = r.user_id AND m.id = r.memory_id)
   OR NOT EXISTS (SELECT 1 FROM entities e WHERE e.user_id = r.user_id AND e.id = r.source_id)
   OR NOT EXISTS (SELECT 1 FROM entities e WHERE e.user_id = r.user_id AND e.id = r.target_id)
ORDER BY 1
"""
ORPHAN_CHUNKS = """
SELECT c.namespace || '/' || c.document_id || '#' || c.position FROM chunks c
WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.namespace = c.namespace AND d.id = c.document_id)
ORDER BY 1
"""
CHUNK_COUNTS = """
SELECT d.namespace || '/' || d.id || ' says ' || d.chunk_count || ', has ' || count(c.id) FROM documents d
LEFT JOIN chunks c ON c.namespace = d.namespace AND c.document_id = d.id
GROUP BY d.namespace, d.id, d.chunk_count HAVING count(c.id) <> d.chunk_count
ORDER BY 1
"""
TERM_COUNTS = """
SELECT coalesce(t.user_id, m.user_id) || '/' || coalesce(t.lexeme, m.lexeme)
       || ' counted ' || coalesce(t.memories, 0) || ', held by ' || coalesce(m.memories, 0)
FROM memory_term_counts t
FULL JOIN (SELECT r.user_id, u.lexeme, count(*) AS memories
           FROM memories r, unnest(r.lexemes) AS u WHERE r.forgotten_at IS NULL GROUP BY 1, 2) m
  ON m.user_id = t.user_id AND m.lexeme = t.lexeme
WHERE t.memories IS DISTINCT FROM m.memories
ORDER BY 1
"""
SESSION_TERMS = """
SELECT coalesce(t.user_id, m.user_id) || '/' || coalesce(t.session_id, m.session_id) || '/'
       || coalesce(t.lexeme, m.lexeme) || ' counted ' || coalesce(t.tf, 0) || ', held ' || coalesce(m.tf, 0)
FROM session_terms t
FULL JOIN (SELECT r.user_id, r.session_id, u.lexeme, sum(coalesce(array_length(u.positions, 1), 1)) AS tf
           FROM memories r, unnest(r.lexemes) AS u
           WHERE r.forgotten_at IS NULL AND r.session_id IS NOT NULL GROUP BY 1, 2, 3) m
  ON m.user_id = t.user_id AND m.session_id = t.session_id AND m.lexeme = t.lexeme
WHERE t.tf IS DISTINCT FROM m.tf
ORDER BY 1
"""
SESSIONS = """
SELECT coalesce(s.user_id, m.user_id) || '/' || coalesce(s.session_id, m.session_id)
       || ' counted ' || coalesce(s.memories, 0) || ' memories, ' || coalesce(s.terms, 0) || ' terms; holds '
       || coalesce(m.memories, 0) || ', ' || coalesce(m.terms, 0)
FROM memory_sessions s
FULL JOIN (SELECT r.user_id, r.session_id, count(*) AS memories, sum(r.term_count) AS terms
           FROM memories r WHERE r.forgotten_at IS NULL AND r.session_id IS NOT NULL GROUP BY 1, 2) m
  ON m.user_id = s.user_id AND m.session_id = s.session_id
WHERE s.memories IS DISTINCT FROM m.memories OR s.terms IS DISTINCT FROM m.terms
ORDER BY 1
"""
CONTEXTS = """
SELECT coalesce(c.user_id, w.user_id) || '/' || coalesce(c.memory_id, w.memory_id)
       || CASE WHEN c.memory_id IS NULL THEN ': live, without its context window'
               WHEN w.memory_id IS NULL THEN ': not live, with a context window'
               ELSE ': its context window is not its neighbours' END
FROM (SELECT x.* FROM memory_contexts x
      JOIN memory_text_totals t ON t.user_id = x.user_id AND t.contexts_ready) c
FULL JOIN (SELECT u.user_id, w.* FROM (SELECT r.user_id, array_agg(r.id) AS ids FROM memories r
                                       JOIN memory_text_totals t ON t.user_id = r.user_id AND t.contexts_ready
                                       WHERE r.forgotten_at IS NULL GROUP BY 1) AS u
           CROSS JOIN LATERAL memory_windows(u.user_id, u.ids) AS w) w
  ON w.user_id = c.user_id AND w.memory_id = c.memory_id
WHERE (c.memory_type, c.lexemes, c.length) IS DISTINCT FROM (w.memory_type, w.lexemes, w.length)
ORDER BY 1
"""
EXPIRED_WORKING = """
SELECT user_id, session_id, array_agg(id) FROM working_memories
WHERE expires_at <= now() GROUP BY user_id, session_id
"""

# The projection as relational rows, and the rows it must mirror (as ops/rebuild.py writes it).
_PROPS = "ag_catalog.agtype_out({}.properties)::text::jsonb"
PROJECTION = {
    "entities": (
        "SELECT p->>'user_id', p->>'id', p->>'name', p->>'type' FROM (SELECT {v} AS p FROM {g}.{Entity} v) x",
        "SELECT user_id, id::text, name, entity_type FROM entities",
    ),
    "memories": (
        "SELECT p->>'user_id', p->>'id' FROM (SELECT {v} AS p FROM {g}.{Memory} v) x",
        "SELECT user_id, id::text FROM memories WHERE memory_type = 'semantic' AND version_of IS NULL",
    ),
    "mentions": (
        "SELECT {m}->>'user_id', {m}->>'id', {e}->>'id' FROM {g}.{MENTIONS} r"
        " JOIN {g}.{Memory} m ON m.id = r.start_id JOIN {g}.{Entity} e ON e.id = r.end_id",
        "SELECT n.user_id, n.memory_id::text, n.entity_id::text FROM mentions n"
        " JOIN memories m ON m.user_id = n.user_id AND m.id = n.memory_id AND m.version_of IS NULL",
    ),
    "relations": (
        "SELECT {r}->>'user_id', {r}->>'memory_id', {a}->>'id', {r}->>'type', {b}->>'id' FROM {g}.{RELATED} r"
        " JOIN {g}.{Entity} a ON a.id = r.start_id JOIN {g}.{Entity} b ON b.id = r.end_id",
        "SELECT r.user_id, r.memory_id::text, r.source_id::text, r.relation_type, r.target_id::text"
        " FROM relations r"
        " JOIN memories m ON m.user_id = r.user_id AND m.id = r.memory_id AND m.version_of IS NULL",
    ),
}
DIFFERENCE = (
    "SELECT 'missing ' || x::text FROM (({truth}) EXCEPT ALL ({graph})) x UNION ALL "
    "SELECT 'extra ' || y::text FROM (({graph}) EXCEPT ALL ({truth})) y ORDER BY 1"
)


@dataclass(frozen=True)
class Violation:
    """One broken invariant: how many rows break it, and a few of them."""

    check: str
    rule: str
    count: int
    sample: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class IntegrityReport:
    checks: list[str]
    violations: list[Violation]

    @property
    def ok(self) -> bool:
        return not self.violations

    def text(self) -> str:
        lines = [f"checked: {', '.join(self.checks)}"]
        if self.ok:
            lines.append("no violations")
        for v in self.violations:
            lines.append(f"VIOLATION {v.check}: {v.count} row(s) break the rule: {v.rule}")
            lines.extend(f"    {s}" for s in v.sample)
        return "\n".join(lines)


def _projection_queries(graph: str) -> dict[str, sql.Composed]:
    names = {label: sql.Identifier(label) for label in ("Entity", "Memory", "MENTIONS", "RELATED")}
    queries = {}
    for name, (projected, truth) in PROJECTION.items():
        props = {alias: sql.SQL(_PROPS.format(alias)) for alias in ("v", "m", "e", "r", "a", "b")}
        graph_sql = sql.SQL(projected).format(g=sql.Identifier(graph), **names, **props)
        queries[name] = sql.SQL(DIFFERENCE).format(truth=sql.SQL(truth), graph=graph_sql)
    return queries


def _rules(db: Database, model: str | None) -> list[tuple[str, str, Any]]:
    """Each invariant the database can hold: its name, its rule, and the query of its breaches."""
    rules: list[tuple[str, str, Any]] = [
        (
            "embeddings",
            "a live long-term memory has an embedding of a registered model, of its "
            "dimension" + (f", by {model}" if model else "") + ", or waits in the embedding queue",
            EMBEDDINGS,
        ),
        ("chunk_embeddings", "a chunk has an embedding or waits in the embedding queue", CHUNK_EMBEDDINGS),
        (
            "embedding_queue",
            "a row waits in the embedding queue only while it lacks its vector",
            QUEUED_WITH_VECTOR,
        ),
        (
            "vector_texts",
            "a live memory's and a chunk's vector is of its current text (the fingerprint kept with it), "
            "or the row waits in the embedding queue",
            STALE_VECTOR_ROWS,
        ),
        (
            "totals",
            "a user's and a namespace's totals are their live rows and terms (and sessions and their terms)",
            TOTALS,
        ),
        ("orphan_entities", "an entity is mentioned by some memory", ORPHAN_ENTITIES),
        ("orphan_mentions", "a mention joins an existing memory and entity", ORPHAN_MENTIONS),
        ("orphan_relations", "a relation joins existing entities and its memory", ORPHAN_RELATIONS),
        ("orphan_chunks", "a chunk belongs to an existing document", ORPHAN_CHUNKS),
        ("chunk_counts", "a document's chunk_count is its number of chunks", CHUNK_COUNTS),
        ("term_counts", "a user's count of a term is the number of live memories holding it", TERM_COUNTS),
        (
            "contexts",
            "a live memory's stored context window is its own and its neighbours' text (and only a live "
            "memory has one), for users whose windows a migration has made",
            CONTEXTS,
        ),
    ]
    if not db.citus:  # a cluster keeps no sessions as documents (sql/citus/distribute.sql)
        rules += [
            ("sessions", "a session counts its live memories and their terms", SESSIONS),
            (
                "session_terms",
                "a session's count of a term is how often its live memories hold it",
                SESSION_TERMS,
            ),
        ]
    if db.graph_enabled:
        for name, query in _projection_queries(db.settings.graph_name).items():
            rules.append((f"projection_{name}", f"the AGE projection mirrors the {name} rows", query))
    return rules


def check_integrity(db: Database, model: str | None = None) -> IntegrityReport:
    """Every invariant of the store; ``model`` is the embedding model live memories must have."""
    db.require_all_rows("the integrity check")
    if model is not None:
        with db.connection() as conn:
            known = [r[0] for r in conn.execute("SELECT model FROM embedding_models ORDER BY 1").fetchall()]
        if model not in known:
            raise InvalidInputError(
                "model", f"must be a registered embedding model ({', '.join(known) or 'none yet'})"
            )
    rules = _rules(db, model)
    violations: list[Violation] = []
    with db.transaction(all_rows=True) as conn:
        for check, rule, query in rules:
            rows = [str(r[0]) for r in conn.execute(query, {"model": model, "sessions": not db.citus})]
            if rows:
                violations.append(Violation(check, rule, len(rows), rows[:SAMPLE]))
        expired = conn.execute(EXPIRED_WORKING).fetchall()
    served = list(_expired_served(db, expired))
    if served:
        violations.append(
            Violation(
                "expired_working", "expired working memory is never served", len(served), served[:SAMPLE]
            )
        )
    return IntegrityReport([r[0] for r in rules] + ["expired_working"], violations)


def _expired_served(db: Database, expired: Iterable[tuple[str, str | None, list[Any]]]) -> Iterable[str]:
    """Expired items that the library's own reads (list and get) would still return."""
    for user_id, session_id, ids in expired:
        working = MemoryManager.of_types(user_id, ["working"], database=db, session_id=session_id)
        listed = {item.id for item in working.list_memories("working")}
        for memory_id in ids:
            if memory_id in listed or working.get_memory(memory_id) is not None:
                yield f"{user_id}/{memory_id}"


def requeue_stale_vectors(db: Database) -> int:
    """Take away every vector that is not of its row's text (``vector_texts``) and queue the row
    for the vector of its text, in one transaction; how many rows."""
    db.require_all_rows("a repair of the vectors")
    with db.transaction(all_rows=True) as conn:
        memories = conn.execute(REQUEUE_MEMORIES).rowcount
        row = conn.execute(REQUEUE_CHUNKS).fetchone()
    return memories + int(row[0] if row else 0)
