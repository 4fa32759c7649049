"""search_memories plans with sorts and sequential scans allowed, whatever its caller forbids.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-02

What it does to a database: sets enable_sort and enable_seqscan on for the duration of each call
of search_memories (and what it calls). The library's plain vector statement runs with both off in
its transaction, so that the one generic plan it keeps for every user reads through the HNSW index
or the user's rows by index, whatever the user's size; when an HNSW scan comes back short that
statement calls search_memories, whose plans (kept for the session) must not be made under those
settings. Instant: no table is touched. Downgrade resets both.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("search--0026.sql")


def downgrade() -> None:
    run_scripts("downgrade--0026.sql")
