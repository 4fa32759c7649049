"""Foundation: extensions, scoring and search functions, memory, RAG and graph tables, AGE graph.

Revision ID: 0001
Revises:
Create Date: 2026-11-30

What it does to a database: creates pgvector (required, 0.8+) and Apache AGE (optional) when the
role may, otherwise stops with the statement for a DBA; creates every table empty, so it is
instant; creates the AGE graph when AGE is installed. Downgrade drops all of it except the
extensions, which other applications may share.
"""

from __future__ import annotations

from alembic import context, op
from sqlalchemy import text

from hello_pgmem.core.settings import Settings
from hello_pgmem.db.extensions import ensure_age, ensure_vector
from hello_pgmem.db.migrations import prepare_sql_session, run_sql_script
from hello_pgmem.db.resources import read_sql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

SCRIPTS = (
    "scoring--0001.sql",
    "text_search--0001.sql",
    "tables--0001.sql",
    "embedding_models--0001.sql",
    "search--0001.sql",
)


def _settings() -> Settings:
    settings: Settings = context.config.attributes["settings"]
    return settings


def upgrade() -> None:
    settings = _settings()
    conn = op.get_bind()
    ensure_vector(conn)
    age_version = ensure_age(conn, settings.age)
    prepare_sql_session(conn)
    for script in SCRIPTS:
        run_sql_script(conn, read_sql(script))
    if age_version is not None:
        exists = conn.execute(
            text("SELECT 1 FROM ag_catalog.ag_graph WHERE name = CAST(:graph AS name)"),
            {"graph": settings.graph_name},
        ).scalar()
        if not exists:
            conn.execute(
                text("SELECT ag_catalog.create_graph(CAST(:graph AS name))"),
                {"graph": settings.graph_name},
            )


def downgrade() -> None:
    settings = _settings()
    conn = op.get_bind()
    age_installed = conn.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'age'")).scalar()
    if age_installed:
        exists = conn.execute(
            text("SELECT 1 FROM ag_catalog.ag_graph WHERE name = CAST(:graph AS name)"),
            {"graph": settings.graph_name},
        ).scalar()
        if exists:
            conn.execute(
                text("SELECT ag_catalog.drop_graph(CAST(:graph AS name), true)"),
                {"graph": settings.graph_name},
            )
    quote = conn.dialect.identifier_preparer.quote_identifier
    conn.exec_driver_sql(f"SET LOCAL search_path TO {quote(settings.schema_name)}, pg_temp")
    run_sql_script(conn, read_sql("downgrade--0001.sql"))
