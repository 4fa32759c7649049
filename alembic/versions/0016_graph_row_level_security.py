"""Row-level security on the AGE graph for the Cypher passthrough.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02

What it does to a database: adds secure_graph(graph, reader) and graph_reader_ready(graph, reader);
with AGE, enables row-level security on every label table of the graph with a permissive policy
for the library's own reads and writes (no change for them) and, when the Cypher read role
(PGMEM_CYPHER_ROLE) exists already, its restrictive per-user policy. "hello-pgmem grant --app"
creates that role and its policies on deployments where it does not exist yet. Instant. Downgrade
removes the policies and the functions.
"""

from __future__ import annotations

from alembic import context, op
from sqlalchemy import text

from hello_pgmem.core.settings import Settings
from hello_pgmem.db.migrations import run_scripts
from hello_pgmem.graph.labels import graph_exists

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_READER = text("SELECT rolname FROM pg_roles WHERE rolname = CAST(:reader AS name)")


def _settings() -> Settings:
    settings: Settings = context.config.attributes["settings"]
    return settings


def upgrade() -> None:
    run_scripts("graph_security--0016.sql")
    settings, conn = _settings(), op.get_bind()
    if graph_exists(conn, settings.graph_name):
        reader = conn.execute(_READER, {"reader": settings.cypher_role}).scalar()
        conn.execute(
            text("SELECT secure_graph(CAST(:graph AS name), CAST(:reader AS name))"),
            {"graph": settings.graph_name, "reader": reader},
        )


def downgrade() -> None:
    op.get_bind().execute(
        text("SELECT set_config('pgmem.graph', :graph, true)"), {"graph": _settings().graph_name}
    )
    run_scripts("downgrade--0016.sql")
