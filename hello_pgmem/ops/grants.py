"""``hello-pgmem grant``: the roles of a deployment and their least privileges, as SQL.

Three roles (docs/security.md):

- the **owner** owns the schema and runs the migrations; ``owner_statements`` prepare it (run
  by a superuser, before the first ``hello-pgmem migrate``);
- the **application** role reads and writes rows, owns nothing, and so is bound by row-level
  security: it sees one user (or namespace) per transaction;
- the **Cypher read role** (``PGMEM_CYPHER_ROLE``) logs in never: the application switches to it
  (``SET LOCAL ROLE``) for a caller's Cypher, and the restrictive policies on the AGE label tables
  show it only the transaction's user;
- the **analytics** role only reads, and sees every user's rows after ``SET pgmem.all_rows = on``.
  It gets no access to the AGE graph: AGE 1.5 runs Cypher ``SET`` and ``DELETE`` without the
  table's UPDATE or DELETE privilege, so a read-only role with Cypher could change the projection.

The statements are composed with ``psycopg.sql`` (every name quoted), printed for review and run
only when asked; every one of them is idempotent.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from hello_pgmem.core.errors import ConfigurationError, InvalidInputError, SchemaNotMigratedError
from hello_pgmem.core.settings import IDENTIFIER, Settings
from hello_pgmem.ops.citus import CITUS_INSTALLED

WRITTEN_TABLES = (  # the tables of user or namespace data the application writes (RLS since 0008)
    "memories",
    "working_memories",
    "entities",
    "mentions",
    "relations",
    "documents",
    "chunks",
    "retrieval_log",
    "memory_accesses",
    "memory_embedding_queue",
    "chunk_embedding_queue",
)
TOTALS_TABLES = (  # kept by triggers, read by search
    "memory_text_totals",
    "memory_contexts",
    "memory_term_counts",
    "memory_sessions",
    "session_terms",
    "chunk_text_totals",
)
RLS_TABLES = (*WRITTEN_TABLES, *TOTALS_TABLES)  # the tables with row-level security
DATA_TABLES = (*WRITTEN_TABLES, "embedding_cache")  # the cache holds no text and no user id: no policy
READ_ONLY_TABLES = ("embedding_models", "alembic_version", "relation_types", *TOTALS_TABLES)
AGE_CATALOG = ("ag_graph", "ag_label")

Statement = sql.SQL | sql.Composed

_VIEWS = "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace AND relkind = 'v' ORDER BY 1"
_TABLES = "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace AND relkind IN ('r', 'p')"
_ROLE_EXISTS = "SELECT 1 FROM pg_roles WHERE rolname = %s"
_MIGRATED = "SELECT to_regclass(format('%%I.alembic_version', %s::text)) IS NOT NULL"
_GRAPH = "SELECT 1 FROM pg_extension e, ag_catalog.ag_graph g WHERE e.extname = 'age' AND g.name = %s::name"
_AGE = "SELECT 1 FROM pg_extension WHERE extname = 'age'"
_POLICY_ROLES = """
SELECT coalesce(array_agg(r.rolname ORDER BY r.rolname) FILTER (WHERE r.rolname IS NOT NULL), '{}')
FROM pg_policy p
LEFT JOIN LATERAL unnest(p.polroles) AS role_oid ON true
LEFT JOIN pg_roles r ON r.oid = role_oid
WHERE p.polrelid = format('%%I.%%I', %s::text, %s::text)::regclass AND p.polname = 'all_rows'
"""


def check_role_name(field: str, name: str) -> str:
    if not IDENTIFIER.match(name) or len(name) > 63:
        raise InvalidInputError(
            field, "must be a role name matching ^[A-Za-z_][A-Za-z0-9_]*$, at most 63 characters"
        )
    return name


def _exists(conn: psycopg.Connection[Any], query: str, *params: object) -> bool:
    return conn.execute(query, params).fetchone() is not None


def _create_role(conn: psycopg.Connection[Any], role: str) -> list[Statement]:
    if _exists(conn, _ROLE_EXISTS, role):
        return []
    return [sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role))]


def owner_statements(
    conn: psycopg.Connection[Any], settings: Settings, owner: str, create: bool = False
) -> list[Statement]:
    """What a superuser runs once so that ``owner`` can migrate: extensions, schema, AGE catalog."""
    role = sql.Identifier(check_role_name("owner", owner))
    schema = sql.Identifier(settings.schema_name)
    statements: list[Statement] = _create_role(conn, owner) if create else []
    statements += [
        sql.SQL("CREATE EXTENSION IF NOT EXISTS vector"),
        sql.SQL("CREATE EXTENSION IF NOT EXISTS btree_gin"),
        sql.SQL("CREATE SCHEMA IF NOT EXISTS {} AUTHORIZATION {}").format(schema, role),
        sql.SQL("GRANT CONNECT, CREATE ON DATABASE {} TO {}").format(
            sql.Identifier(str(conn.info.dbname)), role
        ),
    ]
    age_available = _exists(conn, "SELECT 1 FROM pg_available_extensions WHERE name = 'age'")
    if settings.age != "off" and age_available and not _exists(conn, CITUS_INSTALLED):  # no AGE on Citus
        statements += [
            sql.SQL("CREATE EXTENSION IF NOT EXISTS age"),
            sql.SQL("GRANT USAGE ON SCHEMA ag_catalog TO {}").format(role),
            # create_graph and create_vlabel insert into AGE's catalog as the calling role
            sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ag_catalog TO {}").format(
                role
            ),
        ]
    return statements


def _tables(schema: str, names: tuple[str, ...]) -> sql.Composable:
    return sql.SQL(", ").join(sql.Identifier(schema, name) for name in names)


def role_statements(
    conn: psycopg.Connection[Any],
    settings: Settings,
    app: str | None = None,
    analytics: str | None = None,
    create: bool = False,
) -> list[Statement]:
    """Grants for the application and analytics roles on a migrated schema (re-run after upgrades).

    Long because it lists every grant of both roles in one place, for a DBA to read."""
    schema = settings.schema_name
    if not _exists(conn, _MIGRATED, schema):
        raise SchemaNotMigratedError(f'schema {schema!r} is not migrated: run "hello-pgmem migrate" first')
    views = tuple(str(r[0]) for r in conn.execute(_VIEWS, (schema,)).fetchall())
    present = {str(r[0]) for r in conn.execute(_TABLES, (schema,)).fetchall()}
    read_only = tuple(t for t in READ_ONLY_TABLES if t in present)  # an older revision has fewer
    graph = settings.graph_name
    has_graph = _exists(conn, _AGE) and _exists(conn, _GRAPH, graph)
    statements: list[Statement] = []
    if app is not None:
        role = sql.Identifier(check_role_name("app", app))
        statements += _create_role(conn, app) if create else []
        statements += [
            sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema), role),
            sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {} TO {}").format(
                _tables(schema, DATA_TABLES), role
            ),
            sql.SQL("GRANT SELECT ON {} TO {}").format(_tables(schema, (*read_only, *views)), role),
            sql.SQL("GRANT USAGE ON ALL SEQUENCES IN SCHEMA {} TO {}").format(sql.Identifier(schema), role),
            # registers a new embedding model: its HNSW indexes are built as the owner
            sql.SQL("GRANT EXECUTE ON FUNCTION {}(text, integer, integer, integer) TO {}").format(
                sql.Identifier(schema, "register_embedding_model"), role
            ),
            # the MCP server resolves bearer tokens without reading access_tokens
            sql.SQL("GRANT EXECUTE ON FUNCTION {}(bytea) TO {}").format(
                sql.Identifier(schema, "token_identity"), role
            ),
            # "erase" takes the user's tokens and statistics rows too
            sql.SQL("GRANT EXECUTE ON FUNCTION {}(), {}() TO {}").format(
                sql.Identifier(schema, "erase_user_tokens"), sql.Identifier(schema, "erase_statistics"), role
            ),
            # the embedding workers find their work across users (no text: users and counts), and
            # make the failed rows due at once when their model answers again
            sql.SQL("GRANT EXECUTE ON FUNCTION {}(text, integer), {}(), {}(text, text) TO {}").format(
                sql.Identifier(schema, "embedding_backlog"),
                sql.Identifier(schema, "embedding_queue_status"),
                sql.Identifier(schema, "embedding_queue_retry"),
                role,
            ),
        ]
        if has_graph:
            graph_schema = sql.Identifier(graph)
            statements += [
                sql.SQL("GRANT USAGE ON SCHEMA ag_catalog, {} TO {}").format(graph_schema, role),
                sql.SQL("GRANT SELECT ON {} TO {}").format(_tables("ag_catalog", AGE_CATALOG), role),
                sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {} TO {}").format(
                    graph_schema, role
                ),
                sql.SQL("GRANT USAGE ON ALL SEQUENCES IN SCHEMA {} TO {}").format(graph_schema, role),
                *cypher_reader_statements(conn, settings, members=(app,)),
            ]
    if analytics is not None:
        role = sql.Identifier(check_role_name("analytics", analytics))
        statements += _create_role(conn, analytics) if create else []
        statements += [
            sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema), role),
            sql.SQL("GRANT SELECT ON {} TO {}").format(
                _tables(schema, (*DATA_TABLES, *read_only, *views)), role
            ),
            sql.SQL("GRANT EXECUTE ON FUNCTION {}() TO {}").format(
                sql.Identifier(schema, "embedding_queue_status"), role
            ),
        ]
        for table in RLS_TABLES:
            row = conn.execute(_POLICY_ROLES, (schema, table)).fetchone()
            holders = [str(r) for r in row[0]] if row else []
            if analytics in holders:
                continue
            statements.append(
                sql.SQL("ALTER POLICY all_rows ON {} TO {}").format(
                    sql.Identifier(schema, table),
                    sql.SQL(", ").join(sql.Identifier(r) for r in [*holders, analytics]),
                )
            )
    return statements


def cypher_reader_statements(
    conn: psycopg.Connection[Any], settings: Settings, members: tuple[str, ...] = ()
) -> list[Statement]:
    """The Cypher read role, its read-only grants, the graph's policies naming it, and the roles
    that may switch to it (without inheriting it: its policies must not bind the members)."""
    reader = sql.Identifier(settings.cypher_role)
    schema, graph = sql.Identifier(settings.schema_name), sql.Identifier(settings.graph_name)
    statements: list[Statement] = []
    if not _exists(conn, _ROLE_EXISTS, settings.cypher_role):
        statements.append(sql.SQL("CREATE ROLE {} NOLOGIN").format(reader))
    statements += [
        sql.SQL("GRANT USAGE ON SCHEMA ag_catalog, {}, {} TO {}").format(graph, schema, reader),
        sql.SQL("GRANT SELECT ON {} TO {}").format(_tables("ag_catalog", AGE_CATALOG), reader),
        sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(graph, reader),
        sql.SQL("GRANT EXECUTE ON FUNCTION {}(), {}(anyelement) TO {}").format(
            sql.Identifier(settings.schema_name, "current_memory_user"),
            sql.Identifier(settings.schema_name, "cypher_row_visible"),
            reader,
        ),
        sql.SQL("SELECT {}({}, {})").format(
            sql.Identifier(settings.schema_name, "secure_graph"),
            sql.Literal(settings.graph_name),
            sql.Literal(settings.cypher_role),
        ),
        # AGE's graphid equality is `a == b` on two integers, and leaks nothing; marked so, the
        # read role's joins between labels use their id and endpoint indexes under the policies
        # (an undirected two-hop query: 2.9 s without, 1.2 s with, 2.0 s with no policy at all)
        sql.SQL("ALTER FUNCTION ag_catalog.graphid_eq(ag_catalog.graphid, ag_catalog.graphid) LEAKPROOF"),
    ]
    statements += [
        sql.SQL("GRANT {} TO {} WITH INHERIT FALSE, SET TRUE").format(
            reader, sql.Identifier(check_role_name("app", member))
        )
        for member in members
    ]
    return statements


def prepare_cypher_reader(conn: psycopg.Connection[Any], settings: Settings) -> bool:
    """Set up the Cypher read role when the connected role is a superuser and the graph exists
    (the development database and the tests, which connect as a superuser); True when done."""
    superuser = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
    if not (superuser and superuser[0]) or not (
        _exists(conn, _AGE) and _exists(conn, _GRAPH, settings.graph_name)
    ):
        return False
    if _exists(conn, CITUS_INSTALLED):
        return False
    apply(conn, cypher_reader_statements(conn, settings))
    return True


def render(conn: psycopg.Connection[Any], statements: list[Statement]) -> str:
    """The statements as a SQL script a DBA can read, keep and run."""
    return "".join(f"{statement.as_string(conn)};\n" for statement in statements)


def apply(conn: psycopg.Connection[Any], statements: list[Statement]) -> None:
    """Run the statements in one transaction: all of them, or none.

    A GRANT by a role without the right only warns ("no privileges were granted"); such a
    warning is an error here, so a half-applied setup is never reported as done.
    """
    warnings: list[str] = []

    def collect(notice: psycopg.errors.Diagnostic) -> None:
        if notice.severity_nonlocalized == "WARNING" and "privileges were granted" in (
            notice.message_primary or ""
        ):
            warnings.append(notice.message_primary or "")

    conn.add_notice_handler(collect)
    try:
        with conn.transaction():
            if conn.execute(CITUS_INSTALLED).fetchone() is not None:
                # grants on distributed tables run in parallel on their shards, after which Citus
                # refuses grants on a reference table in the same transaction
                conn.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
            for statement in statements:
                conn.execute(statement)
                if warnings:
                    raise ConfigurationError(f"{warnings[0]}: {_AS_SUPERUSER}")
    except psycopg.errors.InsufficientPrivilege as exc:
        raise ConfigurationError(f"{exc.diag.message_primary or exc}: {_AS_SUPERUSER}") from exc
    finally:
        conn.remove_notice_handler(collect)


_AS_SUPERUSER = (
    "run hello-pgmem grant --apply as a superuser (or print the statements without --apply and hand "
    "them to one); nothing was changed"
)
