"""Distribute a migrated schema over a Citus cluster (``hello-pgmem citus distribute``).

What ``sql/citus/distribute.sql`` does and why is written at its top and in docs/citus.md. Run it
once, as the schema's owner, on the coordinator, after ``hello-pgmem migrate`` with
``PGMEM_AGE=off``; running it again changes nothing.
"""

from __future__ import annotations

from psycopg import sql

from hello_pgmem.db import connect, probe
from hello_pgmem.errors import ConfigurationError
from hello_pgmem.resources import read_sql
from hello_pgmem.settings import Settings

_DISTRIBUTED = """
SELECT c.relname, CASE p.partmethod WHEN 'n' THEN 'reference' ELSE 'distributed' END
FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid
WHERE c.relnamespace = %s::regnamespace
ORDER BY 1
"""


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
        conn.execute(read_sql("citus/distribute.sql"))
        rows = conn.execute(_DISTRIBUTED, (settings.schema_name,)).fetchall()
        placed = {str(row[0]): str(row[1]) for row in rows}
        conn.commit()
    return placed
