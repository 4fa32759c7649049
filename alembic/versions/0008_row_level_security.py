"""Row-level security on every table of user or namespace data, and on the AGE label tables.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30

What it does to a database: adds three small SQL functions, enables and forces row-level
security with its policies on eight tables and the six AGE label tables, and makes the views
security_invoker; instant. From here on a role that is not a superuser sees only the rows of the
user (pgmem.user_id) or namespace (pgmem.namespace) its transaction names: run the application
as a role made by "hello-pgmem grant" (docs/security.md).
"""

from __future__ import annotations

from alembic import context, op
from hello_pgmem.graph.labels import secure_labels, unsecure_labels
from hello_pgmem.migrations import prepare_sql_session, run_sql_script
from hello_pgmem.resources import read_sql
from hello_pgmem.settings import Settings

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def _settings() -> Settings:
    settings: Settings = context.config.attributes["settings"]
    return settings


def upgrade() -> None:
    settings = _settings()
    conn = op.get_bind()
    prepare_sql_session(conn)
    run_sql_script(conn, read_sql("security--0008.sql"))
    secure_labels(conn, settings.graph_name, settings.schema_name)


def downgrade() -> None:
    settings = _settings()
    conn = op.get_bind()
    unsecure_labels(conn, settings.graph_name)
    prepare_sql_session(conn)
    run_sql_script(conn, read_sql("downgrade--0008.sql"))
