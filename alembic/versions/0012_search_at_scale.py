"""Search bounded at scale: the same ranking, over a bounded set of candidates.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01

What it does to a database: replaces search_memories and search_chunks (same signatures, same
scores). The lexical branch ranks at most 200 memories (chunks: max(200, 10 x pool)) chosen by
the rarest query terms, and a vector-only search (p_mode 'vector') asks the index for the limit
alone. Instant. Downgrade restores the definitions of revision 0009.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("search--0012.sql")


def downgrade() -> None:
    run_scripts("downgrade--0012.sql")
