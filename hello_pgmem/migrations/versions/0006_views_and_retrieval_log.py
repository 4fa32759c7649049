"""Views for analysts and the optional retrieval log.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30

What it does to a database: creates views, one function and an empty table; instant.
"""

from __future__ import annotations

from alembic import op

from hello_pgmem.migrations import prepare_sql_session, run_sql_script
from hello_pgmem.resources import read_sql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    prepare_sql_session(op.get_bind())
    run_sql_script(op.get_bind(), read_sql("views--0006.sql"))


def downgrade() -> None:
    prepare_sql_session(op.get_bind())
    run_sql_script(op.get_bind(), read_sql("downgrade--0006.sql"))
