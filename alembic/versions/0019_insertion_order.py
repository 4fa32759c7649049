"""Memories keep the order they were added in; a session's neighbours follow it when times tie.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-02

What it does to a database: adds memories.seq, numbering the memories in the order they are
inserted from the sequence memories_seq (existing rows numbered per user by created_at, then id;
every role with INSERT on memories gets USAGE on the sequence); replaces the index on (user_id,
session_id, created_at) with one that ends in seq, and search_memories with the same ranking whose
neighbours in a session are found by (created_at, seq). Downgrade drops the column and the
sequence and restores revision 0018's function and index.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("order--0019.sql", "search--0019.sql")


def downgrade() -> None:
    run_scripts("downgrade--0019.sql")
