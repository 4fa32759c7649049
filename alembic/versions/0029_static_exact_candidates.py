"""memory_candidates reads a user with few memories by a statement planned once per session.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-02

What it does to a database: replaces memory_candidates. A user with at most exact_scan_rows()
live memories, searched in the embedding space of a model stored as vector (every model up to
2,000 dimensions), is read exactly by a static statement whose plan PL/pgSQL keeps, where the
dynamic statement was parsed and planned on every call. Same rows, same order. Instant: no
table is touched. Downgrade restores revision 0028's definitions.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("search--0029.sql")


def downgrade() -> None:
    run_scripts("search--0028.sql")
