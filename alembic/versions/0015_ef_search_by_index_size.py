"""The HNSW scans' ef_search grows with the model's index; term counts lowered by joins.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01

What it does to a database: adds hnsw_ef_search(model, pool, space), which reads the size of the
model's partial HNSW index from pg_class, and replaces memory_candidates (same signature) to set
hnsw.ef_search with it; replaces the statement trigger function _count_lexemes so that a delete of
many memories lowers the term counts with joins on the key (it could take a plan that rescans its
transition table for every count). No table changes. Downgrade restores memory_candidates of
revision 0007 and _count_lexemes of revision 0014, and drops hnsw_ef_search.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("search--0015.sql", "terms--0015.sql")


def downgrade() -> None:
    run_scripts("search--0007.sql", "downgrade--0015.sql")
