"""A user with few memories has their vector candidates read exactly.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-02

What it does to a database: adds exact_scan_rows() (2,000) and replaces memory_candidates: a user
with at most that many live memories (memory_text_totals) has the nearest memories read by an
exact scan of their rows instead of the HNSW index, which in a table shared by many users misses
some; at that size the exact scan is as fast (docs/benchmarks.md). Instant: no table is touched.
Downgrade restores revision 0018's memory_candidates and drops the function.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("search--0025.sql")


def downgrade() -> None:
    run_scripts("downgrade--0025.sql")
