"""graph_memories with fan-out limits.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30

What it does to a database: replaces graph_memories and builds three B-tree indexes on
mentions and relations (dropping the two they supersede). The builds are not CONCURRENTLY, as
the upgrade runs in one transaction: they block writes to those tables while they build; on a
large graph run it in a quiet window.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("graph--0005.sql")


def downgrade() -> None:
    run_scripts("downgrade--0005.sql")
