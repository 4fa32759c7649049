"""A token resolves in a read-only transaction (the web view's) without recording its use.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-02

What it does to a database: replaces token_identity (same signature, grants kept) so that it
updates last_used_at only in a read-write transaction. Instant: no table is touched. Downgrade
restores revision 0017's token_identity.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("tokens--0021.sql")


def downgrade() -> None:
    run_scripts("downgrade--0021.sql")
