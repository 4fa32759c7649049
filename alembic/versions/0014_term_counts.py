"""Per-user term counts kept by triggers: the hybrid search's document frequencies in one lookup.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01

What it does to a database: adds memory_term_counts (per user and lexeme, how many live memories
hold it), fills it from the memories (one pass over the table), keeps it with triggers on
memories, and replaces search_memories (same signature) to read its document frequencies there
instead of counting each query term's memories. Downgrade drops the table and triggers and
restores search_memories of revision 0012.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("terms--0014.sql", "search--0014.sql")


def downgrade() -> None:
    run_scripts("downgrade--0014.sql", "search--0012.sql")
