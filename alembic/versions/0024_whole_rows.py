"""Memories' rows stay whole up to a page: vectors are read from the row, not from TOAST.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-02

What it does to a database: sets toast_tuple_target = 8160 on memories, so that a row is
compressed or moved out to the TOAST table only when it is longer than a page (by default any row
over about 2 kB, and its vector first). Searches read each candidate's vector; on LoCoMo half the
vectors were in TOAST, and the hybrid search took 17 % longer and the vector search 75 % longer
(docs/benchmarks.md). Instant: rows already written keep their TOASTed values until rewritten
(VACUUM FULL memories). Downgrade resets the option.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("storage--0024.sql")


def downgrade() -> None:
    run_scripts("downgrade--0024.sql")
