"""RAG search: fts_query_any and search_chunks.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30

What it does to a database: creates two functions; no table changes, instant.
"""

from __future__ import annotations

from sqlalchemy import text

from alembic import context, op
from hello_pgmem.migrations import run_sql_script
from hello_pgmem.resources import read_sql
from hello_pgmem.settings import Settings

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _prepare() -> None:
    settings: Settings = context.config.attributes["settings"]
    conn = op.get_bind()
    quote = conn.dialect.identifier_preparer.quote_identifier
    vector_schema = conn.execute(
        text("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'")
    ).scalar_one()
    conn.exec_driver_sql("SELECT '[1]'::vector")
    conn.exec_driver_sql(f"SET LOCAL search_path TO {quote(settings.schema_name)}, {vector_schema}, pg_temp")


def upgrade() -> None:
    _prepare()
    run_sql_script(op.get_bind(), read_sql("rag--0003.sql"))


def downgrade() -> None:
    _prepare()
    run_sql_script(op.get_bind(), read_sql("downgrade--0003.sql"))
