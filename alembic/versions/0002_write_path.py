"""The write path: statistics applied at commit, and the embedding queue.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-04

What it does to a database made by revision 0001 before this one: creates the embedding queues
(``memory_embedding_queue``, ``chunk_embedding_queue``, with row-level security) and the staging
tables of the statistics (``memory_stat_changes``, ``chunk_stat_changes``, ``stat_changes_pending``,
UNLOGGED); drops the triggers that applied each statement's statistics at once under the user's
write lock, and their functions; applies the files of sql/ (sql/statistics.sql and
sql/embedding_queue.sql among them); and makes the triggers of ``write_path.sql``. Existing
memories and chunks keep their vectors; none is queued. A schema that revision 0001 made with
this code is in that state already, and is left as it is. Downgrade makes the earlier triggers
again (``downgrade--0002.sql``) and drops the new tables; then run ``hello-pgmem grant`` again.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

from hello_pgmem.db.migrations import apply_live_sql, prepare_sql_session, run_sql_script
from hello_pgmem.db.resources import read_sql
from hello_pgmem.db.tables import changes, queue

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

EARLIER_WRITE_PATH = text(
    "SELECT 1 FROM pg_trigger WHERE tgrelid = 'memories'::regclass AND tgname = 'memories_lock_writers'"
)
NEW_TABLES = [
    queue.memory_embedding_queue,
    queue.chunk_embedding_queue,
    changes.memory_stat_changes,
    changes.chunk_stat_changes,
    changes.stat_changes_pending,
]


def upgrade() -> None:
    conn = op.get_bind()
    prepare_sql_session(conn)
    if not conn.execute(EARLIER_WRITE_PATH).scalar():
        return  # made by revision 0001 with this code: the write path is this one already
    for table in NEW_TABLES:
        table.create(conn, checkfirst=True)
    run_sql_script(conn, read_sql("upgrade--0002.sql"))
    apply_live_sql(conn)
    run_sql_script(conn, read_sql("write_path.sql"))


def downgrade() -> None:
    conn = op.get_bind()
    prepare_sql_session(conn)
    run_sql_script(conn, read_sql("downgrade--0002.sql"))
