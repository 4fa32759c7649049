"""memory_candidates falls back to an exact scan when the HNSW scan comes back short.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30

What it does to a database: replaces memory_candidates and sets ROWS on it and graph_memories;
instant.
"""

from __future__ import annotations

from alembic import op

from hello_pgmem.migrations import prepare_sql_session, run_sql_script
from hello_pgmem.resources import read_sql

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    prepare_sql_session(op.get_bind())
    run_sql_script(op.get_bind(), read_sql("search--0007.sql"))


def downgrade() -> None:
    prepare_sql_session(op.get_bind())
    run_sql_script(op.get_bind(), read_sql("downgrade--0007.sql"))
