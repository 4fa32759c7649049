"""Access tokens for the MCP server over HTTP, stored as SHA-256 hashes.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01

What it does to a database: creates the empty table access_tokens (row-level security as on the
user tables) and the function token_identity, through which the application role resolves a
token without reading the table. Instant.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("tokens--0011.sql")


def downgrade() -> None:
    run_scripts("downgrade--0011.sql")
