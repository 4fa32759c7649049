"""Each vector keeps the fingerprint of the text it was made of.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-05

What it does: adds ``embedded_hash`` to ``memories`` and ``chunks``, applies the files of sql/
(``vector_fingerprint`` and the trigger function ``_fingerprint_vector`` among them), and creates
the triggers that keep it: a worker names the text it claimed, a write that embeds in the write
its row's own. ``hello-pgmem check`` then reports every live row whose vector is not of its
current text and is not queued (``check --repair`` queues them). Vectors written before the
revision keep no fingerprint. Downgrade drops the triggers and the columns.
"""

from __future__ import annotations

from alembic import op

from hello_pgmem.db.migrations import apply_live_sql, prepare_sql_session, run_sql_script
from hello_pgmem.db.resources import read_sql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    prepare_sql_session(conn)
    run_sql_script(conn, read_sql("upgrade--0006.sql"))
    apply_live_sql(conn)
    run_sql_script(conn, read_sql("upgrade--0006-triggers.sql"))


def downgrade() -> None:
    conn = op.get_bind()
    prepare_sql_session(conn)
    run_sql_script(conn, read_sql("downgrade--0006.sql"))
