"""Plain connections to the server: what it offers (``probe``), a transaction's row-level security
scope, one connection without the pool, and how failed or dead connections are recognised."""

import logging
import selectors
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool

from hello_pgmem.core.deadline import DeadlineExceededError, remaining_ms
from hello_pgmem.core.errors import (
    BusyError,
    DatabaseTimeoutError,
    DatabaseUnavailableError,
    HelloPgmemError,
    ReadOnlyError,
)
from hello_pgmem.core.settings import Settings
from hello_pgmem.db.composites import adapt_memory_filter, adapt_memory_hit

log = logging.getLogger(__name__)

_PROBE = """
SELECT current_setting('server_version'),
       (SELECT extversion FROM pg_extension WHERE extname = 'vector'),
       (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
         WHERE e.extname = 'vector'),
       (SELECT extversion FROM pg_extension WHERE extname = 'age'),
       (SELECT rolsuper FROM pg_roles WHERE rolname = current_user),
       (SELECT rolbypassrls FROM pg_roles WHERE rolname = current_user),
       to_regclass(%(version_table)s) IS NOT NULL,
       (SELECT extversion FROM pg_extension WHERE extname = 'citus')
"""
_REVISION = "SELECT version_num FROM {}.alembic_version"
_FUNCTIONS = """
SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = %s AND p.proname NOT LIKE '\\_%%' ORDER BY 1
"""
_GRAPH_EXISTS = "SELECT 1 FROM ag_catalog.ag_graph WHERE name = %s::name"
_SET_SCOPE = (
    "SELECT set_config('pgmem.user_id', %s, true), set_config('pgmem.namespace', %s, true),"
    " set_config('pgmem.all_rows', %s, true), set_config('pgmem.embedding_model', %s, true)"
)
# Citus sends SET LOCAL to the workers, never set_config: the scope of a transaction on a cluster.
_PROPAGATE_SETS = "SET LOCAL citus.propagate_set_commands = 'local'"
_SET_LOCAL = (
    sql.SQL("SET LOCAL pgmem.user_id = {}"),
    sql.SQL("SET LOCAL pgmem.namespace = {}"),
    sql.SQL("SET LOCAL pgmem.all_rows = {}"),
    sql.SQL("SET LOCAL pgmem.embedding_model = {}"),
)


def set_scope(conn: psycopg.Connection[Any], scope: tuple[str, str, str, str], citus: bool) -> None:
    """Scope a transaction for row-level security; on Citus, so that the workers see it too (SET
    takes no bound parameter: the values are quoted as literals)."""
    if not citus:
        conn.execute(_SET_SCOPE, scope)
        return
    conn.execute(_PROPAGATE_SETS)
    for statement, value in zip(_SET_LOCAL, scope, strict=True):
        conn.execute(statement.format(sql.Literal(value)))


@dataclass(frozen=True)
class ServerInfo:
    """What a database offers hello_pgmem: versions, schema revision and SQL functions."""

    server_version: str
    vector_version: str | None
    vector_schema: str | None
    age_version: str | None
    superuser: bool
    schema: str
    revision: str | None
    functions: tuple[str, ...] = ()
    graph_exists: bool = False
    citus_version: str | None = None
    bypasses_rls: bool = False


def probe(conn: psycopg.Connection[Any], schema: str, graph: str | None = None) -> ServerInfo:
    """Read the server's versions, our schema's revision and whether the AGE graph exists."""
    version_table = f'"{schema}".alembic_version'
    row = conn.execute(_PROBE, {"version_table": version_table}).fetchone()
    assert row is not None
    server, vector, vector_schema, age, superuser, bypass, migrated, citus = row
    revision = None
    functions: tuple[str, ...] = ()
    graph_exists: bool = False
    if migrated:
        query = sql.SQL(_REVISION).format(sql.Identifier(schema))
        found = conn.execute(query).fetchone()
        revision = str(found[0]) if found else None
        functions = tuple(str(r[0]) for r in conn.execute(_FUNCTIONS, (schema,)).fetchall())
    graph_exists = False
    if age is not None and graph is not None:
        graph_exists = conn.execute(_GRAPH_EXISTS, (graph,)).fetchone() is not None
    return ServerInfo(
        graph_exists=graph_exists,
        server_version=str(server),
        vector_version=None if vector is None else str(vector),
        vector_schema=None if vector_schema is None else str(vector_schema),
        age_version=None if age is None else str(age),
        superuser=bool(superuser),
        bypasses_rls=bool(superuser or bypass),
        schema=schema,
        revision=revision,
        functions=functions,
        citus_version=None if citus is None else str(citus),
    )


_UNAVAILABLE_STATES = ("57P01", "57P02", "57P03")  # admin/crash shutdown, cannot connect now


def is_connection_failure(exc: psycopg.Error) -> bool:
    """Whether an error means the server cannot be reached (not a failed statement)."""
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in _UNAVAILABLE_STATES


def our_error(exc: psycopg.Error, settings: Settings) -> HelloPgmemError | None:
    """Our error for a driver's error that says what went wrong with the call rather than with
    its statement (read-only store, lock or statement timeout, the call's deadline, a lost
    server), or None: the statement's own error is raised as it is."""
    if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
        return ReadOnlyError(
            "this store is read-only (PGMEM_READ_ONLY): the write was refused and nothing was changed"
        )
    hint = exc.diag.message_hint or ""
    if (
        isinstance(exc, psycopg.errors.ConfigurationLimitExceeded)
        and "PGMEM_EMBEDDING_QUEUE_MAX_ROWS" in hint
    ):
        return BusyError(f"{exc.diag.message_primary}; {hint}")  # sql/embedding_queue.sql's quota
    if isinstance(exc, psycopg.errors.LockNotAvailable):
        return DatabaseTimeoutError(
            f"waited longer than PGMEM_LOCK_TIMEOUT_MS={settings.lock_timeout_ms} for a lock; "
            "nothing was changed"
        )
    if isinstance(exc, psycopg.errors.QueryCanceled):
        if remaining_ms() is not None:
            return DeadlineExceededError(
                "a statement ran into the call's time limit and was cancelled; nothing was changed"
            )
        return DatabaseTimeoutError(
            f"a statement ran longer than PGMEM_STATEMENT_TIMEOUT_MS={settings.statement_timeout_ms}; "
            "nothing was changed"
        )
    if isinstance(exc, psycopg.OperationalError) and is_connection_failure(exc):
        return DatabaseUnavailableError(f"database connection failed: {exc}".strip())
    return None


def check_idle_connection(conn: psycopg.Connection[Any]) -> None:
    """The pool's check of a connection it hands out, without a round trip when nothing came: an
    idle connection receives nothing unless the server ended it (a restart, a crash,
    pg_terminate_backend), and then its socket reads as ready; only such a connection is checked
    with a query (and replaced when that fails)."""
    with selectors.DefaultSelector() as waiting:  # select.select fails on descriptors >= 1024
        waiting.register(conn.fileno(), selectors.EVENT_READ)
        ready = waiting.select(timeout=0)
    if ready:
        ConnectionPool.check_connection(conn)


def configure(conn: psycopg.Connection[Any], settings: Settings, info: ServerInfo) -> bool | None:
    """Set a pooled connection up: ``search_path`` (our schema, pgvector's, ``ag_catalog`` with AGE),
    the statement and lock timeouts, read-only when the store is, pgvector registered and loaded
    (so that its ``hnsw.*`` settings exist), the search filter's type adapted, AGE loaded. False
    when AGE is installed but this role may not LOAD it; None when there is no AGE."""
    path = [settings.schema_name, info.vector_schema or "public"]
    loaded = None
    if info.age_version is not None:
        path.append("ag_catalog")
        loaded = _load_age(conn, info.superuser)
    search_path = sql.SQL(", ").join(sql.Identifier(name) for name in dict.fromkeys(path))
    conn.execute(
        "SELECT set_config('search_path', %s, false),"
        " set_config('statement_timeout', %s, false),"
        " set_config('lock_timeout', %s, false),"
        " set_config('default_transaction_read_only', %s, false),"
        " set_config('pgmem.embedding_queue_max_rows', %s, false)",
        (
            search_path.as_string(conn),
            str(settings.statement_timeout_ms),
            str(settings.lock_timeout_ms),
            "on" if settings.read_only else "off",
            str(settings.embedding_queue_max_rows),
        ),
    )
    register_vector(conn)
    conn.execute("SELECT '[1]'::vector")
    adapt_memory_filter(conn)
    adapt_memory_hit(conn)
    conn.commit()
    return loaded


def _load_age(conn: psycopg.Connection[Any], superuser: bool) -> bool:
    """LOAD age for Cypher: from $libdir/plugins (any role), else as superuser; whether it loaded.
    A server that preloads age needs neither; LOAD of a loaded library is a no-op."""
    for library in ("$libdir/plugins/age", "age"):
        if library == "age" and not superuser:
            break
        try:
            conn.execute(sql.SQL("LOAD {}").format(sql.Literal(library)))
            return True
        except (psycopg.errors.UndefinedFile, psycopg.errors.InsufficientPrivilege):
            conn.rollback()
    return False


def connect(settings: Settings, autocommit: bool = False) -> psycopg.Connection[Any]:
    """One plain connection (no pool), mapping connection failures to our error."""
    try:
        return psycopg.connect(
            settings.database_url,
            connect_timeout=max(1, int(settings.connect_timeout_s)),
            autocommit=autocommit,
        )
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailableError(f"cannot connect to the database: {exc}".strip()) from exc


def discard_unless_rolled_back(conn: psycopg.Connection[Any]) -> None:
    """End a failed pipelined transaction with the driver's rollback, or close the connection (the
    pool then replaces it). Not a ``ROLLBACK`` statement: psycopg records a statement as prepared
    when it sends its Parse, and when an earlier statement of the pipeline failed the server skipped
    that Parse; ``rollback()`` forgets every prepared statement, a ``ROLLBACK`` it has already
    seen does not, and each later use of the name would fail ("prepared statement … does not
    exist") for whoever gets the connection next."""
    if conn.broken:
        return
    try:
        conn.rollback()
    except psycopg.Error:
        log.warning("a failed transaction could not be rolled back: its connection is closed")
        conn.close()
        return
    if conn.info.transaction_status != TransactionStatus.IDLE:
        conn.close()


@contextmanager
def pipelined(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """One transaction in libpq pipeline mode: BEGIN, the block's statements and COMMIT leave in
    one batch with one sync (psycopg's own transaction handling would wait for the BEGIN first); a
    failure ends it with ``discard_unless_rolled_back``."""
    conn.autocommit = True
    try:
        with conn.pipeline():
            conn.execute("BEGIN")
            yield
            conn.execute("COMMIT")
    except BaseException:
        discard_unless_rolled_back(conn)
        raise
    finally:
        # A connection the server dropped mid-pipeline is not idle: the pool discards it.
        if not conn.broken and conn.info.transaction_status == TransactionStatus.IDLE:
            conn.autocommit = False
