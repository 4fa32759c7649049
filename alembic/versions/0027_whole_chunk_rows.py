"""RAG chunks' rows stay whole up to a page: vectors are read from the row, not from TOAST.

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-02

What it does to a database: sets toast_tuple_target = 8160 on chunks, as revision 0024 did on
memories, so that a chunk's row is compressed or moved out to the TOAST table only when it is
longer than a page. Each chunk of the RAG workload held its vector in TOAST, and a search read it
back for every candidate it scored (docs/benchmarks.md: search 10.2 -> 8.4 ms at p50, the table 7 %
larger). Instant: rows already written keep their TOASTed values until rewritten (VACUUM FULL
chunks). Downgrade resets the option.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("storage--0027.sql")


def downgrade() -> None:
    run_scripts("downgrade--0027.sql")
