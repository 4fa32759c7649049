"""Retention scoring and eviction for the long-term memory loop.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30

What it does to a database: creates two functions; no table changes, instant.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("decay--0004.sql")


def downgrade() -> None:
    run_scripts("downgrade--0004.sql")
