"""Retention scoring and eviction for the long-term memory loop.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30

What it does to a database: creates two functions; no table changes, instant.
"""

from __future__ import annotations

from alembic import op

from hello_pgmem.migrations import prepare_sql_session, run_sql_script
from hello_pgmem.resources import read_sql

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    prepare_sql_session(op.get_bind())
    run_sql_script(op.get_bind(), read_sql("decay--0004.sql"))


def downgrade() -> None:
    prepare_sql_session(op.get_bind())
    run_sql_script(op.get_bind(), read_sql("downgrade--0004.sql"))
