"""query_terms finds the functions it calls whatever the caller's search_path (Citus workers).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01

What it does to a database: gives query_terms the schema's search_path, as every function that
reads tables already has. Instant. Downgrade resets it.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("text--0013.sql")


def downgrade() -> None:
    run_scripts("downgrade--0013.sql")
