"""LangGraph store items that expire.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-05

What it does: adds ``memories.expires_at`` (a store item's expiry, from the ``ttl`` of its put, moved
on by a read that refreshes it) and a partial index of the rows that have one, for the sweeps.
Downgrade drops them.
"""

from __future__ import annotations

from alembic import op

from hello_pgmem.db.migrations import prepare_sql_session, run_sql_script
from hello_pgmem.db.resources import read_sql

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    prepare_sql_session(conn)
    run_sql_script(conn, read_sql("upgrade--0007.sql"))


def downgrade() -> None:
    conn = op.get_bind()
    prepare_sql_session(conn)
    run_sql_script(conn, read_sql("downgrade--0007.sql"))
