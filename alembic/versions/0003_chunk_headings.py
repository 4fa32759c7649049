"""A chunk's lexemes read its heading path.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-04

What it does: applies the files of sql/ (``chunk_lexemes`` among them), makes the chunks' text
trigger call ``_set_text_fields('headings')`` (and fire when the heading path changes too), and
recomputes every chunk's lexemes and term count in place: a section's title then finds each of its
chunks by its words, as the chunk's embedding already read it. The namespaces' statistics follow
(the update's term counts are staged and applied at commit); vectors are untouched. The revision
drops functions whose signatures changed (``_context_window``, ``memory_lexical_branch``,
``windowed_cosine``): run ``hello-pgmem grant`` again after it. Downgrade makes the trigger call
``_set_text_fields()`` again and recomputes the lexemes from the text alone.
"""

from __future__ import annotations

from alembic import op

from hello_pgmem.db.migrations import apply_live_sql, prepare_sql_session, run_sql_script
from hello_pgmem.db.resources import read_sql

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    prepare_sql_session(conn)
    apply_live_sql(conn)
    run_sql_script(conn, read_sql("upgrade--0003.sql"))


def downgrade() -> None:
    conn = op.get_bind()
    prepare_sql_session(conn)
    run_sql_script(conn, read_sql("downgrade--0003.sql"))
