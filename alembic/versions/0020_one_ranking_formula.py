"""The ranking's per-memory arithmetic as SQL functions that both ranking statements call.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02

What it does to a database: creates in_time_range, memory_recency, vector_relevance and
ranking_score (IMMUTABLE SQL functions the planner inlines) and replaces search_memories with the
same ranking written with them; the lean vector statement of the library calls them too, so the
formula has one definition. Instant: no table is touched. Downgrade restores revision 0019's
search_memories and drops the four functions.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("scoring--0020.sql", "search--0020.sql")


def downgrade() -> None:
    run_scripts("downgrade--0020.sql")
