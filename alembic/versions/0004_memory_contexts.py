"""Each memory's context window stored, and statistics of live memories.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-05

What it does: creates ``memory_contexts`` (each live memory's context window as one text, with a GIN
index and row-level security), makes the staged memories say where they were and are
(``memory_stat_changes.memory_id``, ``created_at``, ``seq``), stages a memory that moves in time or
changes type, and counts the users' totals over live memories only (earlier versions and forgotten
memories no longer weigh in BM25); then applies the files of sql/ (sql/contexts.sql among them).
The windows of memories stored before it are not made here: each user with live memories is marked
``contexts_ready = false``, and ``hello-pgmem migrate`` fills them after the revision, user by user
in batches, resumable, with a progress line (:mod:`hello_pgmem.ops.contexts`); until a user is
filled, its searches read the windows from ``memories``. Run ``hello-pgmem grant`` again after it
(the new table). Downgrade drops the table and the columns, and counts forgotten memories again.
"""

from __future__ import annotations

from alembic import op

from hello_pgmem.db.migrations import apply_live_sql, prepare_sql_session, run_sql_script
from hello_pgmem.db.resources import read_sql
from hello_pgmem.db.tables.memory import memory_contexts

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    prepare_sql_session(conn)
    memory_contexts.create(conn, checkfirst=True)
    apply_live_sql(conn)
    run_sql_script(conn, read_sql("upgrade--0004.sql"))


def downgrade() -> None:
    conn = op.get_bind()
    prepare_sql_session(conn)
    run_sql_script(conn, read_sql("downgrade--0004.sql"))
