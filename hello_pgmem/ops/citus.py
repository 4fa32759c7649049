"""Distribute a migrated schema over a Citus cluster (``hello-pgmem citus distribute``, and
``hello-pgmem migrate`` on a coordinator), and what ``doctor`` reads of the cluster.

What ``sql/citus/distribute.sql`` does and why is written at its top and in docs/citus.md. It runs
as the schema's owner, on the coordinator, on a schema migrated without AGE; running it again
changes nothing.
"""

from __future__ import annotations

from psycopg import sql

from hello_pgmem.core.errors import ConfigurationError
from hello_pgmem.core.settings import Settings
from hello_pgmem.db import Conn, ServerInfo, connect, probe
from hello_pgmem.db.resources import read_live_sql

CITUS_INSTALLED = "SELECT 1 FROM pg_extension WHERE extname = 'citus'"
_DISTRIBUTED = """
SELECT c.relname, CASE p.partmethod WHEN 'n' THEN 'reference' ELSE 'distributed' END
FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid
WHERE c.relnamespace = %s::regnamespace
ORDER BY 1
"""
PLACEMENTS = """
SELECT c.relname, p.partmethod, column_to_column_name(p.logicalrelid, p.partkey), p.colocationid
FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid
WHERE c.relnamespace = %s::regnamespace
"""
"""How each table of the schema is placed: its method (``h`` hash, ``n`` reference), distribution
column and co-location group."""
WORKER_EXTENSIONS = """
SELECT nodename || ':' || nodeport, success, result FROM run_command_on_workers($$
    SELECT string_agg(extname || ' ' || extversion, ', ' ORDER BY extname) FROM pg_extension
    WHERE extname IN ('citus', 'vector')$$)
ORDER BY 1
"""
SHARD_RLS = """
SELECT count(*), count(*) FILTER (WHERE success AND result = 't')
FROM run_command_on_shards(%s, $$SELECT relrowsecurity AND relforcerowsecurity
                                  AND EXISTS (SELECT FROM pg_policy WHERE polrelid = '%%1$s'::regclass)
                                  FROM pg_class WHERE oid = '%%1$s'::regclass$$)
"""
"""Of a table's shards: how many there are, and how many have row-level security forced and
policies (read on the worker that holds each)."""

LAYOUT: dict[str, str | None] = {
    **dict.fromkeys(
        (
            "memories",
            "memory_text_totals",
            "memory_term_counts",
            "memory_sessions",
            "session_terms",
            "memory_contexts",
            "working_memories",
            "entities",
            "mentions",
            "relations",
            "memory_accesses",
            "retrieval_log",
        ),
        "user_id",
    ),
    **dict.fromkeys(("documents", "chunks", "chunk_text_totals"), "namespace"),
    **dict.fromkeys(("embedding_models", "embedding_cache", "access_tokens"), None),
}
"""Where ``distribute`` puts each table: distributed by that column (the user tables co-located
with ``memories``, the RAG tables with ``documents``), or a reference table (None)."""


def distribute_on_citus(settings: Settings) -> dict[str, str] | None:
    """:func:`distribute` when the database is a Citus coordinator (what ``migrate`` runs after
    the revisions); None on one server."""
    with connect(settings) as conn:
        info = probe(conn, settings.schema_name, settings.graph_name)
        return None if info.citus_version is None else _distribute(conn, settings, info)


def distribute(settings: Settings) -> dict[str, str]:
    """Distribute the schema named by ``settings`` over the cluster it is the coordinator of;
    returns each table and how it is placed (``distributed`` by user or namespace, or
    ``reference``)."""
    with connect(settings) as conn:
        info = probe(conn, settings.schema_name, settings.graph_name)
        if info.citus_version is None:
            raise ConfigurationError(
                "citus is not installed in this database: connect to a Citus coordinator"
            )
        return _distribute(conn, settings, info)


def _distribute(conn: Conn, settings: Settings, info: ServerInfo) -> dict[str, str]:
    """Check the schema can be distributed, run distribute.sql in ``conn`` and commit."""
    if info.revision is None:
        raise ConfigurationError('the schema is not migrated: run "hello-pgmem migrate" first')
    if info.age_version is not None:
        raise ConfigurationError(
            "Apache AGE is installed in this database and cannot be distributed: "
            "migrate a database without it (PGMEM_AGE=off)"
        )
    conn.execute(
        sql.SQL("SET LOCAL search_path TO {}, {}, pg_temp").format(
            sql.Identifier(settings.schema_name), sql.Identifier(info.vector_schema or "public")
        )
    )
    conn.execute(read_live_sql("citus/distribute.sql"))
    rows = conn.execute(_DISTRIBUTED, (settings.schema_name,)).fetchall()
    placed = {str(row[0]): str(row[1]) for row in rows}
    conn.commit()
    return placed
