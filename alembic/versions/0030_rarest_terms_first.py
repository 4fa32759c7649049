"""When no query term is rare, the full-text index looks up the rarest terms only.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-02

What it does to a database: replaces search_memories. For a user with more than 200 memories
and a question whose every term is in more than 200 of them, the candidates (the memories that
hold every term) were found by intersecting every term's postings in the GIN index; the index
now looks up the rarest terms, as many as it takes for their memories (were the terms
independent) to be at most 50, and the other terms are checked in the rows it finds. Same rows,
same order, same scores. Instant: no table is touched. Downgrade restores revision 0029's
definitions.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("search--0030.sql")


def downgrade() -> None:
    run_scripts("search--0028.sql", "search--0029.sql")
