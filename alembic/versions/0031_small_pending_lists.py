"""The lexical indexes take new rows into a small pending list, merged in bulk.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-03

What it does to a database: the GIN indexes on memories' and chunks' lexemes get GIN's fast
update with a pending list of at most 64 kB (they wrote through since revision 0012), and a
statement trigger on each table (``_merge_pending_terms``, not on Citus) merges the list when an
INSERT of more than one row ends. Inserts no longer put each lexeme into the tree on its own;
searches read at most 8 pending pages, none after a batch. Same rows found, same scores.
Instant: no index is rebuilt. Downgrade merges the pending lists and writes through again.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("text--0031.sql")


def downgrade() -> None:
    run_scripts("downgrade--0031.sql")
