"""The schema: extensions, tables, the functions and views of sql/, row-level security, triggers.

Revision ID: 0001
Revises:
Create Date: 2026-12-03

What it does to a database: creates pgvector (0.8+), btree_gin and btree_gist (beside pgvector)
and Apache AGE (optional) when the role may, otherwise stops with the statement for a DBA;
creates every table of :mod:`hello_pgmem.db.tables`, empty, so it is instant, and the composite
types (``types.sql``, revision 0008's); applies the files of sql/ (functions and views, recorded
in ``sql_applied``); then ``baseline.sql``: row-level security, the triggers, the relation types'
rules, and ``write_path.sql``: the triggers of the statistics and the embedding queue (0002 brings
a schema made before it to the same state); and creates the AGE graph when AGE is installed, with
its vertex and edge labels, their indexes and their row-level security. Downgrade drops all of it
except the extensions, which other applications may share.
"""

from __future__ import annotations

from alembic import context, op
from sqlalchemy import text

from hello_pgmem.core.settings import Settings
from hello_pgmem.db.extensions import ensure_age, ensure_extension, ensure_vector
from hello_pgmem.db.migrations import apply_live_sql, prepare_sql_session, run_sql_script
from hello_pgmem.db.resources import read_sql
from hello_pgmem.db.tables import metadata
from hello_pgmem.graph.labels import create_labels

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

GRAPH_EXISTS = text("SELECT 1 FROM ag_catalog.ag_graph WHERE name = CAST(:graph AS name)")
CREATE_GRAPH = text("SELECT ag_catalog.create_graph(CAST(:graph AS name))")
DROP_GRAPH = text("SELECT ag_catalog.drop_graph(CAST(:graph AS name), true)")
AGE_INSTALLED = text("SELECT 1 FROM pg_extension WHERE extname = 'age'")
READER = text("SELECT rolname FROM pg_roles WHERE rolname = CAST(:reader AS name)")
SECURE_GRAPH = text("SELECT secure_graph(CAST(:graph AS name), CAST(:reader AS name))")


def _settings() -> Settings:
    settings: Settings = context.config.attributes["settings"]
    return settings


def upgrade() -> None:
    settings = _settings()
    conn = op.get_bind()
    ensure_vector(conn)
    for extension in ("btree_gin", "btree_gist"):  # GIN indexes led by the owner; the exclusion constraint
        ensure_extension(conn, extension, beside="vector")
    age_version = ensure_age(conn, settings.age)
    prepare_sql_session(conn)
    metadata.create_all(conn)
    run_sql_script(conn, read_sql("types.sql"))  # the composite types sql/'s functions take and return
    apply_live_sql(conn)
    run_sql_script(conn, read_sql("baseline.sql"))
    run_sql_script(conn, read_sql("write_path.sql"))
    if age_version is not None:
        graph = {"graph": settings.graph_name}
        if not conn.execute(GRAPH_EXISTS, graph).scalar():
            conn.execute(CREATE_GRAPH, graph)
        create_labels(conn, settings.graph_name)
        # row-level security on every label table; the Cypher read role's policy where it exists
        reader = conn.execute(READER, {"reader": settings.cypher_role}).scalar()
        conn.execute(SECURE_GRAPH, {**graph, "reader": reader})


def downgrade() -> None:
    settings = _settings()
    conn = op.get_bind()
    graph = {"graph": settings.graph_name}
    if conn.execute(AGE_INSTALLED).scalar() and conn.execute(GRAPH_EXISTS, graph).scalar():
        conn.execute(DROP_GRAPH, graph)
    quote = conn.dialect.identifier_preparer.quote_identifier
    conn.exec_driver_sql(f"SET LOCAL search_path TO {quote(settings.schema_name)}, pg_temp")
    run_sql_script(conn, read_sql("downgrade--0001.sql"))
