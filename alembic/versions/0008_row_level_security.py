"""Row-level security on every table of user or namespace data.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30

What it does to a database: adds three small SQL functions, enables and forces row-level
security with its policies on eight tables, and makes the views security_invoker; instant.
From here on a role that is not a superuser sees only the rows of the user (pgmem.user_id) or
namespace (pgmem.namespace) its transaction names: run the application as a role made by
"hello-pgmem grant". The AGE label tables get no policies: docs/security.md says why, and how
Cypher is scoped instead.
"""

from __future__ import annotations

from hello_pgmem.db.migrations import run_scripts

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_scripts("security--0008.sql")


def downgrade() -> None:
    run_scripts("downgrade--0008.sql")
