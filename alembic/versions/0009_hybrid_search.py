"""Hybrid search: language-aware full text for memories and chunks, BM25 in SQL, search_memories.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01

What it does to a database: creates btree_gin in pgvector's schema (a trusted extension: any role
that may create objects in the database may create it; otherwise stops with the statement for a
DBA; downgrade leaves it, as other applications may share it). Adds text_config, lexemes and
term_count to memories and chunks (recorded_at to memories), fills them for the existing rows in
batches of 5,000 and builds a GIN index on each (16 s for 100,000 memories on the development
machine); drops the search_text columns and their indexes, which the new columns replace, and the
fts_* functions of revisions 0001 and 0003.
Adds the per-user and per-namespace totals tables with row-level security, the triggers that keep
them and the text columns, search_memories, and a new search_chunks (BM25 instead of ts_rank_cd).
All in the migration's one transaction: memories and chunks are locked until it commits.
"""

from __future__ import annotations

from alembic import op

from hello_pgmem.db.extensions import ensure_extension
from hello_pgmem.db.migrations import run_scripts

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    ensure_extension(op.get_bind(), "btree_gin", beside="vector")
    run_scripts("text--0009.sql", "search--0009.sql")


def downgrade() -> None:
    # the fts_* functions of 0001 first (search_text uses them), search_chunks of 0003 last
    run_scripts("text_search--0001.sql", "downgrade--0009.sql", "rag--0003.sql")
