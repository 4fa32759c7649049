"""``hello-pgmem doctor``: is this database ready and healthy for hello_pgmem? Each finding has a fix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from psycopg import sql

from hello_pgmem.db import connect, probe
from hello_pgmem.extensions import MIN_VECTOR, version_tuple
from hello_pgmem.migrations import head_revision
from hello_pgmem.ops.grants import DATA_TABLES, READ_ONLY_TABLES, RLS_TABLES
from hello_pgmem.settings import Settings

Level = Literal["ok", "warn", "error"]

MODEL_INDEXES = sql.SQL("""
SELECT m.model, t.prefix || m.index_suffix, i.indexrelid IS NOT NULL AS present,
       coalesce(i.indisvalid, false) AS valid
FROM {models} m
CROSS JOIN (VALUES ('memories_embedding_'), ('memories_text_embedding_'), ('chunks_embedding_')) AS t(prefix)
LEFT JOIN pg_class c ON c.relname = t.prefix || m.index_suffix AND c.relnamespace = %(schema)s::regnamespace
LEFT JOIN pg_index i ON i.indexrelid = c.oid
ORDER BY 1, 2
""")
PRIVILEGES = """
SELECT t, has_table_privilege(%(role)s, format('%%I.%%I', %(schema)s::text, t), %(privileges)s)
FROM unnest(%(tables)s::text[]) AS t
WHERE to_regclass(format('%%I.%%I', %(schema)s::text, t)) IS NOT NULL
"""
RLS = """
SELECT c.relname FROM pg_class c
WHERE c.relnamespace = %(schema)s::regnamespace AND c.relname = ANY(%(tables)s)
  AND NOT (c.relrowsecurity AND c.relforcerowsecurity)
"""
BYPASS = "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = %(role)s"


def _scalar(conn: Any, query: str) -> Any:
    row = conn.execute(query).fetchone()
    assert row is not None
    return row[0]


@dataclass(frozen=True)
class Finding:
    level: Level
    check: str
    message: str
    fix: str | None = None


def diagnose(settings: Settings, role: str | None = None) -> list[Finding]:
    """Every check, in order; ``role`` is the application's role (default: the connecting one)."""
    findings: list[Finding] = []
    add = findings.append
    with connect(settings) as conn:
        info = probe(conn, settings.schema_name, settings.graph_name)
        number = int(_scalar(conn, "SHOW server_version_num"))
        add(
            Finding("ok", "server", f"PostgreSQL {info.server_version}")
            if number >= 140000
            else Finding(
                "error",
                "server",
                f"PostgreSQL {info.server_version} is too old",
                "use PostgreSQL 14 or newer (17 tested)",
            )
        )
        if info.vector_version is None:
            add(
                Finding(
                    "error",
                    "pgvector",
                    "pgvector is not installed in this database",
                    "have a superuser run: CREATE EXTENSION vector;",
                )
            )
        elif version_tuple(info.vector_version) < MIN_VECTOR:
            add(
                Finding(
                    "error",
                    "pgvector",
                    f"pgvector {info.vector_version} is older than 0.8.0",
                    "upgrade the package, then: ALTER EXTENSION vector UPDATE;",
                )
            )
        else:
            add(Finding("ok", "pgvector", f"pgvector {info.vector_version} in schema {info.vector_schema}"))
        if info.age_version is None:
            add(
                Finding(
                    "warn",
                    "age",
                    "Apache AGE is not installed: everything works except the Cypher interface",
                    "optional: install AGE, CREATE EXTENSION age; then hello-pgmem migrate",
                )
            )
        elif not info.graph_exists:
            add(
                Finding(
                    "warn",
                    "age",
                    f"AGE {info.age_version} is installed but graph {settings.graph_name!r} is missing",
                    "run hello-pgmem migrate",
                )
            )
        else:
            add(Finding("ok", "age", f"AGE {info.age_version}, graph {settings.graph_name}"))
        head = head_revision()
        if info.revision != head:
            add(
                Finding(
                    "error",
                    "schema",
                    f"schema {info.schema!r} is at revision {info.revision or 'none'}, the code needs {head}",
                    "run hello-pgmem migrate",
                )
            )
            return findings
        add(Finding("ok", "schema", f"schema {info.schema} at revision {head}"))
        params: dict[str, Any] = {
            "schema": settings.schema_name,
            "tables": list(RLS_TABLES),
            "role": role or str(_scalar(conn, "SELECT current_user")),
        }
        for model, index, present, valid in conn.execute(
            MODEL_INDEXES.format(models=sql.Identifier(settings.schema_name, "embedding_models")), params
        ).fetchall():
            if not present or not valid:
                add(
                    Finding(
                        "error",
                        "indexes",
                        f"the HNSW index {index} of model {model!r} is "
                        f"{'missing' if not present else 'invalid'}",
                        f"re-create it: SELECT {settings.schema_name}._create_model_indexes(model, "
                        f"dimension, index_suffix, 16, 64) FROM {settings.schema_name}.embedding_models "
                        f"WHERE model = '{model}'"
                        if not present
                        else f"REINDEX INDEX CONCURRENTLY {settings.schema_name}.{index}",
                    )
                )
        if not any(f.check == "indexes" for f in findings):
            add(Finding("ok", "indexes", "every registered embedding model has its valid HNSW indexes"))
        missing = [
            t
            for tables, privileges in (
                (DATA_TABLES, "SELECT, INSERT, UPDATE, DELETE"),
                (READ_ONLY_TABLES, "SELECT"),
            )
            for t, ok in conn.execute(
                PRIVILEGES, {**params, "tables": list(tables), "privileges": privileges}
            )
            if not ok
        ]
        if missing:
            add(
                Finding(
                    "error",
                    "grants",
                    f"role {params['role']!r} lacks privileges on {', '.join(missing)}",
                    f"hello-pgmem grant --app {params['role']} (prints the GRANTs; --apply runs them)",
                )
            )
        else:
            add(Finding("ok", "grants", f"role {params['role']!r} can read and write every table"))
        unprotected = [r[0] for r in conn.execute(RLS, params).fetchall()]
        if unprotected:
            add(
                Finding(
                    "error",
                    "rls",
                    f"row-level security is not enabled and forced on {', '.join(unprotected)}",
                    "hello-pgmem migrate (revision 0008 enables it); do not ALTER TABLE … DISABLE it",
                )
            )
        else:
            add(
                Finding(
                    "ok", "rls", f"row-level security is forced on all {len(RLS_TABLES)} tables of user data"
                )
            )
        bypass = conn.execute(BYPASS, params).fetchone()
        if bypass is not None and (bypass[0] or bypass[1]):
            add(
                Finding(
                    "warn",
                    "rls",
                    f"role {params['role']!r} is a {'superuser' if bypass[0] else 'BYPASSRLS role'}: "
                    "row-level security does not apply to it, isolation rests on the library's filters",
                    "run the application as its own role: hello-pgmem grant --app <role> --create-roles",
                )
            )
        work_mem = str(_scalar(conn, "SELECT setting FROM pg_settings WHERE name = 'maintenance_work_mem'"))
        if int(work_mem) < 256 * 1024:
            add(
                Finding(
                    "warn",
                    "settings",
                    f"maintenance_work_mem is {int(work_mem) // 1024} MB: HNSW builds of "
                    "large tables will be slow",
                    "ALTER SYSTEM SET maintenance_work_mem = '1GB'; SELECT pg_reload_conf();",
                )
            )
        else:
            add(Finding("ok", "settings", f"maintenance_work_mem is {int(work_mem) // 1024} MB"))
    return findings
