"""Queue generations that never come twice.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-05

What it does: creates the sequence ``embedding_generations``, starts it past every generation a
queue holds, and makes both queues' ``generation`` a bigint drawn from it (the live
sql/embedding_queue.sql draws a new one at every new text). Before it, a row that a search's
catch-up embedded and dequeued, then queued again by an edit, came back at the generation a
worker still held for its older text, which that worker's vector then matched. Downgrade makes the
generations per-row integers again.
"""

from __future__ import annotations

from alembic import op

from hello_pgmem.db.migrations import apply_live_sql, prepare_sql_session, run_sql_script
from hello_pgmem.db.resources import read_sql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    prepare_sql_session(conn)
    run_sql_script(conn, read_sql("upgrade--0005.sql"))
    apply_live_sql(conn)


def downgrade() -> None:
    conn = op.get_bind()
    prepare_sql_session(conn)
    run_sql_script(conn, read_sql("downgrade--0005.sql"))
