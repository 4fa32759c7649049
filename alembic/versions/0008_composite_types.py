"""The search's composite types made by a revision.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-06

What it does: makes ``memory_filter`` (a memory search's filters) and ``memory_hit`` (a hit of the
hybrid search) where the schema has none (``alembic/sql/types.sql``, which revision 0001 runs for a
new schema), with their comments. Schemas migrated before it have both, made by the files of sql/
of their time; from this revision on, a change of a type's fields is a revision's. Downgrade keeps
them: the functions of sql/ take and return them (a downgrade to base drops them with the schema).
"""

from __future__ import annotations

from alembic import op

from hello_pgmem.db.migrations import prepare_sql_session, run_sql_script
from hello_pgmem.db.resources import read_sql

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    prepare_sql_session(conn)
    run_sql_script(conn, read_sql("types.sql"))


def downgrade() -> None:
    """The types stay: every function of sql/ that searches memories is made of them."""
