"""A memory's context: the two memories before and the two after it in its session.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-02

What it does to a database: replaces search_memories. The context term of the hybrid ranking reads
the memory with the two memories before it and the two after it in its session as one text five
turns long (it read one on each side); everything else is unchanged. Measured on LoCoMo and
LongMemEval in docs/search.md. Instant: no table is touched. Downgrade restores revision 0020's
search_memories.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("search--0023.sql")


def downgrade() -> None:
    run_scripts("downgrade--0023.sql")
