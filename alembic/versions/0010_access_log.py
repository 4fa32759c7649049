"""Searches write no memory: an UNLOGGED access log, folded into the counters by maintain and decay.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01

What it does to a database: creates the UNLOGGED table memory_accesses (row-level security as on
memories), the view pending_accesses, the function fold_accesses; apply_decay folds its user's
accesses before it ranks; memory_stats, stale_memories and decay_candidates count the accesses
not folded yet. Instant. A crash empties the log: the access counts not folded yet are lost,
never a memory. Downgrade folds the log first.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("access--0010.sql")


def downgrade() -> None:
    run_scripts("downgrade--0010.sql")
