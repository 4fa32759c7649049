"""Knowledge graph retrieval, perceptual text space, AGE labels and property indexes.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30

What it does to a database: adds two nullable columns to memories (instant, no rewrite),
creates a partial HNSW index on memories.text_embedding for each registered model (fast: the
column is empty), replaces the search functions, adds the graph functions and view. With AGE:
creates the Entity and Memory vertex labels and the MENTIONS and RELATED edge labels with GIN
indexes on their properties and B-tree indexes on vertex ids and edge endpoints (AGE 1.5 makes
none of them itself).
"""

from __future__ import annotations

from sqlalchemy import text

from alembic import context, op
from hello_pgmem.graph.labels import create_labels, drop_labels
from hello_pgmem.migrations import run_sql_script
from hello_pgmem.resources import read_sql
from hello_pgmem.settings import Settings

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _settings() -> Settings:
    settings: Settings = context.config.attributes["settings"]
    return settings


def _search_path(settings: Settings) -> None:
    conn = op.get_bind()
    quote = conn.dialect.identifier_preparer.quote_identifier
    vector_schema = conn.execute(
        text("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'")
    ).scalar_one()
    conn.exec_driver_sql("SELECT '[1]'::vector")
    conn.exec_driver_sql(f"SET LOCAL search_path TO {quote(settings.schema_name)}, {vector_schema}, pg_temp")


def upgrade() -> None:
    settings = _settings()
    _search_path(settings)
    conn = op.get_bind()
    for script in ("embedding_models--0002.sql", "search--0002.sql", "graph--0002.sql"):
        run_sql_script(conn, read_sql(script))
    create_labels(conn, settings.graph_name)


def downgrade() -> None:
    settings = _settings()
    conn = op.get_bind()
    drop_labels(conn, settings.graph_name)
    _search_path(settings)
    for script in ("downgrade--0002.sql", "embedding_models--0001.sql", "search--0001.sql"):
        run_sql_script(conn, read_sql(script))
