"""``hello-pgmem doctor``: is this database ready and healthy for hello_pgmem? Each finding has a fix.

One function per check, each returning its findings; :func:`diagnose` runs them in order and
stops after the schema check when the schema is not at the head revision (the later checks read
our tables).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from psycopg import sql

from hello_pgmem.core.settings import Settings
from hello_pgmem.db import Conn, ServerInfo, connect, probe
from hello_pgmem.db.extensions import MIN_VECTOR, version_tuple
from hello_pgmem.db.migrations import head_revision
from hello_pgmem.ops import citus
from hello_pgmem.ops.grants import DATA_TABLES, READ_ONLY_TABLES, RLS_TABLES

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
SERVER_VERSION = "SHOW server_version_num"
CURRENT_ROLE = "SELECT current_user"
MAINTENANCE_WORK_MEM = "SELECT setting FROM pg_settings WHERE name = 'maintenance_work_mem'"


@dataclass(frozen=True)
class Finding:
    level: Level
    check: str
    message: str
    fix: str | None = None


@dataclass(frozen=True)
class Context:
    """What every check may read: the connection, the probe, the settings, the role checked."""

    conn: Conn
    info: ServerInfo
    settings: Settings
    role: str

    def scalar(self, query: str) -> Any:
        row = self.conn.execute(query).fetchone()
        assert row is not None
        return row[0]

    @property
    def params(self) -> dict[str, Any]:
        return {"schema": self.settings.schema_name, "tables": list(RLS_TABLES), "role": self.role}


Check = Callable[[Context], list[Finding]]


def check_server(ctx: Context) -> list[Finding]:
    if int(ctx.scalar(SERVER_VERSION)) >= 140000:
        return [Finding("ok", "server", f"PostgreSQL {ctx.info.server_version}")]
    return [
        Finding(
            "error",
            "server",
            f"PostgreSQL {ctx.info.server_version} is too old",
            "use PostgreSQL 14 or newer (17 tested)",
        )
    ]


def check_pgvector(ctx: Context) -> list[Finding]:
    version = ctx.info.vector_version
    if version is None:
        fix = "have a superuser run: CREATE EXTENSION vector;"
        return [Finding("error", "pgvector", "pgvector is not installed in this database", fix)]
    if version_tuple(version) < MIN_VECTOR:
        fix = "upgrade the package, then: ALTER EXTENSION vector UPDATE;"
        return [Finding("error", "pgvector", f"pgvector {version} is older than 0.8.0", fix)]
    return [Finding("ok", "pgvector", f"pgvector {version} in schema {ctx.info.vector_schema}")]


def check_age(ctx: Context) -> list[Finding]:
    info, graph = ctx.info, ctx.settings.graph_name
    if info.age_version is None and info.citus_version is not None:
        message = "Apache AGE is not used on Citus (it cannot be distributed): graph questions use the tables"
        return [Finding("ok", "age", message)]
    if info.age_version is None:
        message = "Apache AGE is not installed: everything works except the Cypher interface"
        return [
            Finding(
                "warn",
                "age",
                message,
                "optional: install AGE, CREATE EXTENSION age; then hello-pgmem migrate",
            )
        ]
    if not info.graph_exists:
        message = f"AGE {info.age_version} is installed but graph {graph!r} is missing"
        return [Finding("warn", "age", message, "run hello-pgmem migrate")]
    return [Finding("ok", "age", f"AGE {info.age_version}, graph {graph}")]


def check_schema(ctx: Context) -> list[Finding]:
    head = head_revision()
    if ctx.info.revision != head:
        message = (
            f"schema {ctx.info.schema!r} is at revision {ctx.info.revision or 'none'}, the code needs {head}"
        )
        return [Finding("error", "schema", message, "run hello-pgmem migrate")]
    return [Finding("ok", "schema", f"schema {ctx.info.schema} at revision {head}")]


def check_indexes(ctx: Context) -> list[Finding]:
    schema = ctx.settings.schema_name
    query = MODEL_INDEXES.format(models=sql.Identifier(schema, "embedding_models"))
    findings = []
    for model, index, present, valid in ctx.conn.execute(query, ctx.params).fetchall():
        if present and valid:
            continue
        if not present:
            call = f"{schema}._create_model_indexes(model, dimension, index_suffix, 16, 64)"
            fix = f"re-create it: SELECT {call} FROM {schema}.embedding_models WHERE model = '{model}'"
        else:
            fix = f"REINDEX INDEX CONCURRENTLY {schema}.{index}"
        state = "missing" if not present else "invalid"
        findings.append(
            Finding("error", "indexes", f"the HNSW index {index} of model {model!r} is {state}", fix)
        )
    return findings or [
        Finding("ok", "indexes", "every registered embedding model has its valid HNSW indexes")
    ]


def check_grants(ctx: Context) -> list[Finding]:
    wanted = ((DATA_TABLES, "SELECT, INSERT, UPDATE, DELETE"), (READ_ONLY_TABLES, "SELECT"))
    missing = [
        table
        for tables, privileges in wanted
        for table, ok in ctx.conn.execute(
            PRIVILEGES, {**ctx.params, "tables": list(tables), "privileges": privileges}
        )
        if not ok
    ]
    if missing:
        message = f"role {ctx.role!r} lacks privileges on {', '.join(missing)}"
        fix = f"hello-pgmem grant --app {ctx.role} (prints the GRANTs; --apply runs them)"
        return [Finding("error", "grants", message, fix)]
    return [Finding("ok", "grants", f"role {ctx.role!r} can read and write every table")]


def check_rls(ctx: Context) -> list[Finding]:
    unprotected = [row[0] for row in ctx.conn.execute(RLS, ctx.params).fetchall()]
    if unprotected:
        message = f"row-level security is not enabled and forced on {', '.join(unprotected)}"
        fix = "hello-pgmem migrate (it enables it); do not ALTER TABLE … DISABLE it"
        findings = [Finding("error", "rls", message, fix)]
    else:
        message = f"row-level security is forced on all {len(RLS_TABLES)} tables of user data"
        findings = [Finding("ok", "rls", message)]
    bypass = ctx.conn.execute(BYPASS, ctx.params).fetchone()
    if bypass is not None and (bypass[0] or bypass[1]):
        kind = "superuser" if bypass[0] else "BYPASSRLS role"
        message = (
            f"role {ctx.role!r} is a {kind}: row-level security does not apply to it, "
            "isolation rests on the library's filters"
        )
        fix = "run the application as its own role: hello-pgmem grant --app <role> --create-roles"
        findings.append(Finding("warn", "rls", message, fix))
    return findings


ROLE_EXISTS = "SELECT 1 FROM pg_roles WHERE rolname = %s"
CYPHER_READER = """
SELECT {ready}(%(graph)s, %(reader)s),
       CASE WHEN (SELECT count(*) FROM pg_roles WHERE rolname IN (%(reader)s, %(role)s)) = 2
            THEN pg_has_role(%(role)s, %(reader)s, 'SET') ELSE false END
"""


def check_cypher(ctx: Context) -> list[Finding]:
    """Whether the Cypher passthrough can run as its read role."""
    if ctx.info.age_version is None or not ctx.info.graph_exists:
        return []
    reader, schema = ctx.settings.cypher_role, ctx.settings.schema_name
    query = sql.SQL(CYPHER_READER).format(ready=sql.Identifier(schema, "graph_reader_ready"))
    params = {"graph": ctx.settings.graph_name, "reader": reader, "role": ctx.role}
    row = ctx.conn.execute(query, params).fetchone()
    ready, may_switch = (bool(row[0]), bool(row[1])) if row else (False, False)
    fix = f"hello-pgmem grant --app {ctx.role} --apply (as a superuser)"
    if not ready:
        message = f"the Cypher passthrough is off: read role {reader!r} or the graph's policies missing"
        return [Finding("warn", "cypher", message, fix)]
    if not may_switch:
        message = f"role {ctx.role!r} may not switch to the Cypher read role {reader!r}"
        return [Finding("warn", "cypher", message, fix)]
    return [Finding("ok", "cypher", f"Cypher runs as {reader!r}, kept to one user by row-level security")]


def check_settings(ctx: Context) -> list[Finding]:
    megabytes = int(str(ctx.scalar(MAINTENANCE_WORK_MEM))) // 1024
    if megabytes < 256:
        message = f"maintenance_work_mem is {megabytes} MB: HNSW builds of large tables will be slow"
        fix = "ALTER SYSTEM SET maintenance_work_mem = '1GB'; SELECT pg_reload_conf();"
        return [Finding("warn", "settings", message, fix)]
    return [Finding("ok", "settings", f"maintenance_work_mem is {megabytes} MB")]


def check_citus_nodes(ctx: Context) -> list[Finding]:
    """On a Citus coordinator: every worker answers and has citus and pgvector as here."""
    if ctx.info.citus_version is None:
        return []
    here = f"citus {ctx.info.citus_version}, vector {ctx.info.vector_version}"
    workers = ctx.conn.execute(citus.WORKER_EXTENSIONS).fetchall()
    if not workers:
        fix = "SELECT citus_add_node('<host>', <port>); (docs/citus.md)"
        return [Finding("error", "citus", "the coordinator has no worker nodes", fix)]
    findings = []
    for node, success, extensions in workers:
        if not success:
            findings.append(Finding("error", "citus", f"worker {node} does not answer: {extensions}"))
        elif extensions != here:
            message = f"worker {node} has {extensions or 'neither extension'}, the coordinator {here}"
            findings.append(Finding("error", "citus", message, "install the same versions on every node"))
    return findings or [Finding("ok", "citus", f"{len(workers)} workers, each with {here}")]


def check_citus_tables(ctx: Context) -> list[Finding]:
    """On a Citus coordinator: every table placed as ``hello-pgmem citus distribute`` places it."""
    if ctx.info.citus_version is None:
        return []
    placed = {
        str(name): (str(method), column, group)
        for name, method, column, group in ctx.conn.execute(citus.PLACEMENTS, (ctx.settings.schema_name,))
    }
    if "memories" not in placed:
        fix = "hello-pgmem citus distribute (as the schema owner)"
        return [Finding("error", "citus", "the schema is not distributed over the cluster", fix)]
    group = placed["memories"][2]
    wrong = []
    for table, column in citus.LAYOUT.items():
        method, actual, colocation = placed.get(table, ("local", None, None))
        expected = ("n", None) if column is None else ("h", column)
        if (method, actual) != expected or (column is not None and colocation != group):
            wrong.append(table)
    if wrong:
        message = f"tables not placed as distribute places them: {', '.join(sorted(wrong))}"
        return [Finding("error", "citus", message, "see docs/citus.md, 'Migrate and it is distributed'")]
    return [
        Finding(
            "ok",
            "citus",
            "user tables by user_id and RAG tables by namespace, co-located; registries on every node",
        )
    ]


def check_citus_shards(ctx: Context) -> list[Finding]:
    """On a Citus coordinator: row-level security forced, with policies, on every shard."""
    if (
        ctx.info.citus_version is None
        or not ctx.conn.execute(citus.PLACEMENTS, (ctx.settings.schema_name,)).fetchone()
    ):
        return []
    unprotected, shards = [], 0
    for table in RLS_TABLES:
        name = sql.Identifier(ctx.settings.schema_name, table).as_string(ctx.conn)
        total, protected = ctx.conn.execute(citus.SHARD_RLS, (name,)).fetchone() or (0, 0)
        shards += int(total)
        if protected != total:
            unprotected.append(f"{table} ({int(total) - int(protected)} of {total} shards)")
    if unprotected:
        message = f"row-level security is missing on shards of {', '.join(unprotected)}"
        return [Finding("error", "citus", message, "hello-pgmem migrate, then hello-pgmem citus distribute")]
    return [Finding("ok", "citus", f"row-level security forced, with policies, on all {shards} shards")]


BEFORE_SCHEMA: tuple[Check, ...] = (check_server, check_pgvector, check_age, check_schema)
AFTER_SCHEMA: tuple[Check, ...] = (
    check_indexes,
    check_grants,
    check_rls,
    check_cypher,
    check_settings,
    check_citus_nodes,
    check_citus_tables,
    check_citus_shards,
)


def diagnose(settings: Settings, role: str | None = None) -> list[Finding]:
    """Every check, in order; ``role`` is the application's role (default: the connecting one)."""
    findings: list[Finding] = []
    with connect(settings) as conn:
        info = probe(conn, settings.schema_name, settings.graph_name)
        row = conn.execute(CURRENT_ROLE).fetchone()
        ctx = Context(conn, info, settings, role or str(row[0] if row else ""))
        for check in BEFORE_SCHEMA:
            findings += check(ctx)
        if role is not None and conn.execute(ROLE_EXISTS, (role,)).fetchone() is None:
            fix = f"hello-pgmem grant --app {role} --create-roles --apply (as a superuser)"
            return [*findings, Finding("error", "role", f"role {role!r} does not exist", fix)]
        if any(f.check == "schema" and f.level == "error" for f in findings):
            return findings
        for check in AFTER_SCHEMA:
            findings += check(ctx)
    return findings
