"""The hybrid ranking reads each full-text candidate once, and looks up fewer neighbours.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-02

What it does to a database: replaces search_memories and memory_candidates and adds
memory_similarity. The ranking is the same (same rows, same scores); a search does less per
candidate: neighbours are read by key only when they hold a query term, the BM25 of a memory and
of its context are summed in one aggregate, and a full-text candidate's components come from the
scan that found it. memory_candidates sets hnsw.ef_search only when it scans the HNSW index.
Instant: no table is touched. Downgrade restores revisions 0023, 0025 and 0026's definitions and
drops memory_similarity.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("search--0028.sql")


def downgrade() -> None:
    run_scripts("search--0023.sql", "search--0025.sql", "search--0026.sql", "downgrade--0028.sql")
