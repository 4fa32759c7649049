"""memory_candidates falls back to an exact scan when the HNSW scan comes back short.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30

What it does to a database: replaces memory_candidates and sets ROWS on it and graph_memories;
instant.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("search--0007.sql")


def downgrade() -> None:
    run_scripts("downgrade--0007.sql")
