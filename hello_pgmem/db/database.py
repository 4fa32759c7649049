"""Connections: a psycopg pool configured for hello_pgmem (:func:`~hello_pgmem.db.connections.configure`:
search_path, pgvector, AGE, timeouts), its transactions, and the process's shared pools."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from hello_pgmem.core.deadline import check_deadline, remaining_ms
from hello_pgmem.core.errors import (
    ConfigurationError,
    DatabaseUnavailableError,
    ExtensionMissingError,
    SchemaNotMigratedError,
)
from hello_pgmem.core.settings import Settings
from hello_pgmem.db.batches import insert_rows
from hello_pgmem.db.connections import (
    ServerInfo,
    check_idle_connection,
    configure,
    connect,
    our_error,
    pipelined,
    probe,
    set_scope,
)

log = logging.getLogger(__name__)

Conn = psycopg.Connection[Any]
"""A connection of the pool, inside one of :meth:`Database.transaction`'s transactions."""

_REGISTER_MODEL = "SELECT register_embedding_model(%s, %s, %s, %s)"
_MODEL_DIMENSION = "SELECT dimension FROM embedding_models WHERE model = %s"
_SEES_ALL_ROWS = """
SELECT r.rolsuper OR r.rolbypassrls OR EXISTS (
    SELECT 1 FROM pg_policy p, unnest(p.polroles) AS holder
    WHERE p.polrelid = 'memories'::regclass AND p.polname = 'all_rows' AND pg_has_role(holder, 'MEMBER'))
FROM pg_roles r WHERE r.rolname = current_user
"""


_SHARED: dict[str, Database] = {}
"""The process's Databases made by :meth:`Database.shared`, by their settings."""
_SHARED_LOCK = threading.Lock()


class Database:
    """A pool of configured connections to one hello_pgmem schema. Opens on first use."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self._pool: ConnectionPool | None = None
        self._info: ServerInfo | None = None
        self._age_warned = False
        self._models: set[str] = set()
        self._opening = threading.Lock()  # threads that open it at once share one pool
        self._shared_key: str | None = None  # set when it is the process's (Database.shared)
        self._shares = 0
        self._closers: list[Callable[[], None]] = []

    @classmethod
    def shared(cls, database: Database | None, settings: Settings | None = None) -> tuple[Database, bool]:
        """``database`` when given (the caller closes it); else the process's one Database for
        ``settings`` (or the environment), made on first use and shared by everything that asks
        for the same settings. The second value says whether the caller holds a share, which its
        ``close`` gives back (``release``): the pool closes when the last share is given back."""
        if database is not None:
            return database, False
        settings = settings or Settings()
        key = settings.model_dump_json()
        with _SHARED_LOCK:
            db = _SHARED.get(key)
            if db is None:
                db = _SHARED[key] = cls(settings)
                db._shared_key = key
            db._shares += 1
        return db, True

    def release(self) -> None:
        """Give back one share of a process-wide Database (see :meth:`shared`); the last one
        closes the pool. A Database made directly is simply closed."""
        key = self._shared_key
        if key is None:
            self.close()
            return
        with _SHARED_LOCK:
            self._shares -= 1
            if self._shares > 0:
                return
            if _SHARED.get(key) is self:
                del _SHARED[key]
        self.close()

    # ------------------------------------------------------------------ lifecycle

    @property
    def info(self) -> ServerInfo:
        """Server and schema facts, read once when the pool opens."""
        if self._info is None:
            self.open()
        assert self._info is not None
        return self._info

    @property
    def citus(self) -> bool:
        """Whether the database is a Citus cluster's coordinator (the scope is then propagated)."""
        return self.info.citus_version is not None

    def insert_rows(
        self,
        conn: psycopg.Connection[Any],
        one: str,
        many: str,
        rows: Sequence[Mapping[str, Any]],
        columns: Sequence[str],
        **common: Any,
    ) -> None:
        """Insert ``rows`` with ``common`` parameters in the caller's transaction
        (:func:`~hello_pgmem.db.batches.insert_rows`, as this server takes them)."""
        insert_rows(conn, self.citus, one, many, rows, columns, common)

    def call_rows(
        self, conn: psycopg.Connection[Any], plain: str, delegated: str, params: Mapping[str, Any]
    ) -> list[Sequence[Any]]:
        """The rows of a distributed function's call: ``plain`` (``SELECT … FROM f(…)``) on one
        server; on Citus ``delegated``, the bare ``SELECT f(…)`` that Citus runs whole on the
        worker holding its first argument (the only form it delegates), each row one record read
        in binary so that its fields come typed, in ``plain``'s column order."""
        if self.citus:
            return [row[0] for row in conn.execute(delegated, params, binary=True)]
        return conn.execute(plain, params).fetchall()

    @property
    def graph_enabled(self) -> bool:
        """Whether the AGE graph exists and is used (AGE installed, not PGMEM_AGE=off)."""
        return self.info.graph_exists and self.settings.age != "off"

    def open(self) -> None:
        """Check the database is ready, then open the pool. Raises a clear error if it is not."""
        if self._pool is not None:
            return
        with self._opening:
            if self._pool is None:
                self._open()

    def _open(self) -> None:
        from hello_pgmem.db.migrations import head_revision

        with connect(self.settings) as conn:
            info = probe(conn, self.settings.schema_name, self.settings.graph_name)
        if info.vector_version is None:
            raise ExtensionMissingError(
                'pgvector is not installed in this database: run "hello-pgmem migrate" '
                "or ask a superuser to run: CREATE EXTENSION vector;",
                "CREATE EXTENSION vector;",
            )
        head = head_revision()
        if info.revision != head:
            found = "never migrated" if info.revision is None else f"at revision {info.revision!r}"
            raise SchemaNotMigratedError(
                f'schema {info.schema!r} is {found}, the code needs {head!r}: run "hello-pgmem migrate"'
            )
        if info.age_version is None:
            log.info("Apache AGE is not installed: the Cypher interface is unavailable")
        if info.bypasses_rls:
            # the development server is a superuser's by design: said, not warned
            development = self.settings.on_development_server
            log.log(
                logging.INFO if development else logging.WARNING,
                "connected as a role that row-level security does not bind (%s): every user's rows "
                "are open to this process; run applications as the role hello-pgmem grant --app makes",
                "a superuser" if info.superuser else "BYPASSRLS",
            )
        self._info = info
        pool = ConnectionPool(
            self.settings.database_url,
            min_size=self.settings.pool_min_size,
            max_size=self.settings.pool_max_size,
            kwargs={"connect_timeout": max(1, int(self.settings.connect_timeout_s))},
            configure=self._configure,
            check=check_idle_connection,  # a connection the server dropped is replaced
            timeout=self.settings.connect_timeout_s,
            open=False,
            name="hello_pgmem",
        )
        pool.open(wait=False)
        self._pool = pool

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once when this Database closes, before its pool (background work)."""
        self._closers.append(callback)

    def close(self) -> None:
        closers, self._closers = self._closers, []
        for callback in closers:
            callback()
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __enter__(self) -> Database:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        """The pool's set-up of a new connection (and of one whose session was discarded)."""
        info = self._info
        assert info is not None
        if configure(conn, self.settings, info) is False and not self._age_warned:
            self._age_warned = True
            log.warning(
                "cannot LOAD age for this role: link age.so into $libdir/plugins or add "
                "age to shared_preload_libraries to use the Cypher interface"
            )

    # ------------------------------------------------------------------ use

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection; its transaction commits on success and rolls back on error."""
        self.open()
        assert self._pool is not None
        try:
            with self._pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise DatabaseUnavailableError(
                f"no database connection within {self.settings.connect_timeout_s:g}s: {exc}"
            ) from exc
        except psycopg.Error as exc:
            ours = our_error(exc, self.settings)
            if ours is None:
                raise
            raise ours from exc

    def require_all_rows(self, what: str) -> None:
        """Raise unless this role can read every user's rows (owner, analytics, superuser)."""
        with self.connection() as conn:
            row = conn.execute(_SEES_ALL_ROWS).fetchone()
        if not (row and row[0]):
            raise ConfigurationError(
                f"{what} reads every user's rows, and row-level security shows this role one user at "
                "a time: run it as the schema owner or a superuser"
            )

    def ensure_embedding_model(self, model: str, dimension: int) -> None:
        """Register an embedding model once per process (creates its HNSW indexes if new, with
        PGMEM_HNSW_M and PGMEM_HNSW_EF_CONSTRUCTION; a known model keeps its indexes). A read-only
        store only checks that the model is registered with this dimension."""
        if model in self._models:
            return
        with self.connection() as conn:
            if self.settings.read_only:
                row = conn.execute(_MODEL_DIMENSION, (model,)).fetchone()
                if row is None or row[0] != dimension:
                    raise ConfigurationError(
                        f"embedding model {model!r} ({dimension} dimensions) is not registered in this "
                        "database, and a read-only store cannot register it: nothing was embedded with it"
                    )
            else:
                hnsw = (self.settings.hnsw_m, self.settings.hnsw_ef_construction)
                try:
                    conn.execute(_REGISTER_MODEL, (model, dimension, *hnsw))
                except psycopg.errors.ProgramLimitExceeded as exc:
                    raise ConfigurationError(f"{exc.diag.message_primary} ({exc.diag.message_hint})") from exc
        self._models.add(model)

    @contextmanager
    def transaction(
        self,
        user_id: str | None = None,
        pipeline: bool = False,
        *,
        namespace: str | None = None,
        all_rows: bool = False,
        embedding_model: str | None = None,
    ) -> Iterator[psycopg.Connection[Any]]:
        """One transaction, scoped for row-level security for its duration (SET LOCAL).

        ``user_id`` becomes ``pgmem.user_id`` (memory rows), ``namespace`` ``pgmem.namespace``
        (RAG rows); ``all_rows`` asks for every row, which only the owner and analytics roles
        get. A transaction that names none of them sees no user data. ``embedding_model``
        (``pgmem.embedding_model``) is the model the rows it writes without a vector are queued
        for (sql/embedding_queue.sql).

        With ``pipeline`` the statements are sent without waiting for each other (libpq pipeline
        mode): a transaction of writes that read no results costs one round trip, a read that
        fetches its rows inside the block two (the scope, the query and its rows; then COMMIT).
        A cursor's rows can be read after the block instead, once the COMMIT has been answered:
        one round trip (``rows_in_one_trip``). ``rowcount`` is only there once something is
        fetched.
        """
        scope = (user_id or "", namespace or "", "on" if all_rows else "off", embedding_model or "")
        scoped = bool(
            user_id or namespace or all_rows or embedding_model
        )  # transaction-local: unset is empty
        check_deadline()
        with self.connection() as conn:
            if pipeline:
                with pipelined(conn):
                    if scoped:
                        set_scope(conn, scope, self.citus)
                    self._limit_to_deadline(conn)
                    yield conn
                return
            with conn.transaction():
                if scoped:
                    set_scope(conn, scope, self.citus)
                self._limit_to_deadline(conn)
                yield conn

    @contextmanager
    def throwaway_transaction(self, user_id: str) -> Iterator[psycopg.Connection[Any]]:
        """A transaction scoped to ``user_id`` that is always rolled back, on a connection whose
        session is discarded afterwards (``DISCARD ALL``, then configured again): nothing its
        statements did to the session — settings, advisory locks, a role — outlives it. For
        statements written by a caller."""
        check_deadline()
        with self.connection() as conn:
            try:
                with conn.transaction(force_rollback=True):
                    set_scope(conn, (user_id, "", "off", ""), self.citus)
                    self._limit_to_deadline(conn)
                    yield conn
            finally:
                self._discard_session(conn)

    def _discard_session(self, conn: psycopg.Connection[Any]) -> None:
        """Reset an idle connection's session to what the pool made; close it when that fails."""
        if conn.closed:
            return
        try:
            conn.autocommit = True
            conn.execute("DISCARD ALL")
            conn.autocommit = False
            self._configure(conn)
        except psycopg.Error:
            log.warning("a session could not be reset after a caller's statements: its connection is closed")
            conn.close()

    def limit_statements(self, conn: psycopg.Connection[Any], limit_ms: int) -> None:
        """End the transaction's statements after ``limit_ms`` at most (SET LOCAL; a shorter limit
        already set, the configured one or the call's deadline, stays)."""
        row = conn.execute("SELECT current_setting('statement_timeout')::interval").fetchone()
        current = row[0].total_seconds() * 1000 if row else 0
        if current == 0 or limit_ms < current:
            conn.execute("SELECT set_config('statement_timeout', %s, true)", (str(limit_ms),))

    def _limit_to_deadline(self, conn: psycopg.Connection[Any]) -> None:
        """Under a call's time limit, the transaction's statements end at it (SET LOCAL)."""
        left = remaining_ms()
        if left is None:
            return
        configured = self.settings.statement_timeout_ms
        limit = left if configured == 0 else min(left, configured)
        conn.execute("SELECT set_config('statement_timeout', %s, true)", (str(limit),))

    def rows_in_one_trip(
        self,
        user_id: str,
        statement: str,
        params: Mapping[str, Any],
        before: Sequence[tuple[str, Mapping[str, Any]]] = (),
    ) -> list[Any]:
        """The rows of one statement in a transaction of its own, scoped to ``user_id``, in one
        round trip: BEGIN, the scope, the statements ``before`` it (their results unread, e.g.
        settings), the statement and COMMIT leave together, and its rows are read once the
        server has answered them all."""
        return self.reads_in_one_trip(user_id, [(statement, params)], before)[0]

    def reads_in_one_trip(
        self,
        user_id: str,
        statements: Sequence[tuple[str, Mapping[str, Any]]],
        before: Sequence[tuple[str, Mapping[str, Any]]] = (),
    ) -> list[list[Any]]:
        """The rows of each of ``statements`` in one transaction and round trip, as
        ``rows_in_one_trip`` reads one."""
        with self.transaction(user_id, pipeline=True) as conn:
            for earlier, earlier_params in before:
                conn.execute(earlier, earlier_params)
            cursors = [conn.execute(statement, params) for statement, params in statements]
        return [cursor.fetchall() for cursor in cursors]  # received at the pipeline's sync
