"""Knowledge graph retrieval, perceptual text space, AGE labels and property indexes.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30

What it does to a database: adds two nullable columns to memories (instant, no rewrite),
creates a partial HNSW index on memories.text_embedding for each registered model (fast: the
column is empty), replaces the search functions, adds the graph functions and view. With AGE:
creates the Entity and Memory vertex labels and the MENTIONS and RELATED edge labels with GIN
indexes on their properties and B-tree indexes on vertex ids and edge endpoints (AGE 1.5 makes
none of them itself).
"""

from __future__ import annotations

from alembic import context, op

from hello_pgmem.core.settings import Settings
from hello_pgmem.db.migrations import run_scripts
from hello_pgmem.graph.labels import create_labels, drop_labels

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _settings() -> Settings:
    settings: Settings = context.config.attributes["settings"]
    return settings


def upgrade() -> None:
    run_scripts("embedding_models--0002.sql", "search--0002.sql", "graph--0002.sql")
    create_labels(op.get_bind(), _settings().graph_name)


def downgrade() -> None:
    drop_labels(op.get_bind(), _settings().graph_name)
    run_scripts("downgrade--0002.sql", "embedding_models--0001.sql", "search--0001.sql")
