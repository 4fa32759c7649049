"""Views for analysts and the optional retrieval log.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30

What it does to a database: creates views, one function and an empty table; instant.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("views--0006.sql")


def downgrade() -> None:
    run_scripts("downgrade--0006.sql")
