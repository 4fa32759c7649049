"""The memory search filters by session prefix and by a jsonpath predicate on the metadata.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02

What it does to a database: replaces memory_candidates and search_memories with the same ranking
and two filters more, last among their parameters and applied inside every candidate scan:
p_session_prefix (the session_id starts with it) and p_where with p_where_vars (a jsonpath
predicate on the metadata and its variables). The LangGraph store searches a namespace and its
filter with them. No table changes. Downgrade restores the functions of revisions 0014 and 0015.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("search--0018.sql")


def downgrade() -> None:
    run_scripts("downgrade--0018.sql", "search--0014.sql", "search--0015.sql")
