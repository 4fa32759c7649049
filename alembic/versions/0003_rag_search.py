"""RAG search: fts_query_any and search_chunks.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30

What it does to a database: creates two functions; no table changes, instant.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("rag--0003.sql")


def downgrade() -> None:
    run_scripts("downgrade--0003.sql")
