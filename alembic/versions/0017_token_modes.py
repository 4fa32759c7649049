"""What a token may do (read, write or admin, per namespace), and erasure that takes tokens too.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02

What it does to a database: adds access_tokens.mode (existing tokens: admin, what they could do
before; new ones: write) and access_tokens.namespace_modes, and makes token_identity answer with
both (recreated; the roles that could call it still can); adds erase_user_tokens() for "erase"
(the same roles may call it) and rewords retrieval_log's comment. Instant: the new columns have
constant defaults. Downgrade drops the columns and the function and restores token_identity of
revision 0011.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("erase--0017.sql", "tokens--0017.sql")


def downgrade() -> None:
    run_scripts("downgrade--0017.sql")
