"""Facts with two clocks: valid time and recorded time on memories and relations.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-02

What it does to a database: installs btree_gist (for the exclusion constraint); adds valid_to,
superseded_at and version_of to memories (a memory held from created_at, was recorded at
recorded_at; its earlier versions become rows of their own), valid_from, valid_to, recorded_at,
superseded_at and single_valued to relations (backfilled from their memories: valid since the
memory's time, recorded at creation), the table relation_types (lives_in, works_at, married_to
and their Chinese forms single-valued), closes overlapping single-valued relations where the next
one starts and adds the constraint that keeps them apart; relation_edges follows what holds now;
memory_stats counts memories, not versions; the views memory_history and current_facts and the
functions holds_as_of, memory_as_of, memories_as_of, relations_as_of, search_memories_as_of.
Rewrites relations once (one UPDATE); memories only gain nullable columns. Downgrade deletes
earlier versions and closed relations, then drops all of it (btree_gist stays).
"""

from __future__ import annotations

from alembic import op

from hello_pgmem.db.extensions import ensure_extension
from hello_pgmem.db.migrations import run_scripts

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    ensure_extension(op.get_bind(), "btree_gist", beside="vector")
    run_scripts("history--0022.sql", "temporal--0022.sql")


def downgrade() -> None:
    run_scripts("downgrade--0022.sql")
