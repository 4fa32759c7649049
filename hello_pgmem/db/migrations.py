"""Run the Alembic migrations from Python: ``upgrade``, ``downgrade``, ``current_revision``.

The same revisions run through ``hello-pgmem migrate`` and through ``alembic`` with
``alembic.ini``; both take the database and schema from :class:`~hello_pgmem.core.settings.Settings`.

Two kinds of change, each kept once (sql/README.md):

- the revisions of ``alembic/versions`` change tables and data, each once, in order;
- the files of ``sql/`` hold the functions and views as they are now. :func:`apply_live_sql` runs
  every file whose text changed since it was last applied (``sql_applied`` holds each file's
  SHA-256), at the end of every upgrade to head, in the upgrade's transaction.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from hello_pgmem.core.errors import ConfigurationError, DatabaseUnavailableError
from hello_pgmem.core.settings import Settings
from hello_pgmem.db.resources import read_live_sql, resource_dir

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy import Connection


def sqlalchemy_url(database_url: str) -> str:
    """A libpq URL or ``key=value`` string as SQLAlchemy's psycopg 3 URL ``postgresql+psycopg://…``."""
    from psycopg.conninfo import conninfo_to_dict
    from sqlalchemy.engine import URL, make_url

    if "://" not in database_url:
        params = conninfo_to_dict(database_url)
        port = params.pop("port", None)
        url = URL.create(
            "postgresql+psycopg",
            username=_str(params.pop("user", None)),
            password=_str(params.pop("password", None)),
            host=_str(params.pop("host", None)),
            port=int(port) if port else None,
            database=_str(params.pop("dbname", None)),
            query={key: str(value) for key, value in params.items()},
        )
        return url.render_as_string(hide_password=False)
    url = make_url(database_url)
    if url.get_backend_name() not in ("postgresql", "postgres"):
        raise ValueError(f"DATABASE_URL must be a postgresql:// URL, got {url.drivername!r}")
    return url.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)


def _str(value: object) -> str | None:
    return None if value is None else str(value)


def alembic_config(settings: Settings | None = None) -> Config:
    """An Alembic configuration for ``settings`` that needs no alembic.ini."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(resource_dir("alembic")))
    config.attributes["settings"] = settings or Settings()
    return config


LIVE_FILES = (
    "filters.sql",  # first: the search functions take its type
    "security.sql",
    "scoring.sql",
    "ranking.sql",
    "text.sql",
    "statistics.sql",
    "sessions.sql",
    "contexts.sql",
    "embedding_queue.sql",
    "embedding_models.sql",
    "access.sql",
    "tokens.sql",
    "temporal.sql",
    "search.sql",
    "views.sql",  # last: a view needs the functions it calls
)
"""The files of sql/ in the order they are applied."""

_APPLIED_TABLE = """
CREATE TABLE IF NOT EXISTS sql_applied (
    file       text PRIMARY KEY,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""
_APPLIED = "SELECT file, checksum FROM sql_applied"
_RECORD = """
INSERT INTO sql_applied (file, checksum) VALUES (%s, %s)
ON CONFLICT (file) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()
"""


def apply_live_sql(conn: Connection) -> list[str]:
    """Run the files of sql/ whose text changed since they were last applied (all of them on a new
    schema), in the migration's transaction and search_path; the names of those run.

    Function bodies are checked when they are called, not when they are created
    (``check_function_bodies`` off, as pg_restore does), so a function may name a table or a
    function another file makes; views are checked as they are made, after every function."""
    driver = conn.connection.driver_connection
    assert driver is not None
    driver.execute(_APPLIED_TABLE)
    applied = dict(driver.execute(_APPLIED).fetchall())
    driver.execute("SELECT set_config('check_function_bodies', 'off', true)")
    ran = []
    for name in LIVE_FILES:
        script = read_live_sql(name)
        checksum = hashlib.sha256(script.encode("utf-8")).hexdigest()
        if applied.get(name) != checksum:
            driver.execute(script)
            driver.execute(_RECORD, (name, checksum))
            ran.append(name)
    driver.execute("SELECT set_config('check_function_bodies', 'on', true)")
    return ran


def upgrade(settings: Settings | None = None, revision: str = "head") -> None:
    """Migrate the schema up to ``revision`` (idempotent: at head it does nothing), applying the
    files of sql/ that changed when that is head. :func:`hello_pgmem.ops.migrate.upgrade` also
    prepares the Cypher read role and distributes a Citus cluster: what ``hello-pgmem migrate`` runs."""
    from alembic import command

    settings = settings or Settings()
    config = alembic_config(settings)
    config.attributes["live_sql"] = revision == "head"
    with _connection_errors(), _unknown_revision(settings):
        command.upgrade(config, revision)


def downgrade(settings: Settings | None = None, revision: str = "base") -> None:
    """Migrate down to ``revision``; ``base`` removes every hello_pgmem object from the schema."""
    from alembic import command

    with _connection_errors():
        command.downgrade(alembic_config(settings), revision)


@contextmanager
def _unknown_revision(settings: Settings) -> Iterator[None]:
    """A schema stamped with a revision this version does not know, as a clear error."""
    from alembic.util.exc import CommandError

    try:
        yield
    except CommandError as exc:
        if "Can't locate revision" not in str(exc):
            raise
        raise ConfigurationError(
            f"schema {settings.schema_name!r} is at a revision this version of hello_pgmem does not know "
            f"({exc}): it was made by another version; migrate it with that version, or make a new schema"
        ) from exc


@contextmanager
def _connection_errors() -> Iterator[None]:
    """A server that cannot be reached as DatabaseUnavailableError, as everywhere else."""
    from sqlalchemy.exc import OperationalError

    from hello_pgmem.db import is_connection_failure

    try:
        yield
    except OperationalError as exc:
        if exc.orig is None or not is_connection_failure(exc.orig):  # type: ignore[arg-type]
            raise
        raise DatabaseUnavailableError(f"cannot connect to the database: {exc.orig}".strip()) from exc


_REVISION = re.compile(r'^revision = "(\w+)"$', re.M)
_DOWN_REVISION = re.compile(r'^down_revision = "(\w+)"$', re.M)


@functools.cache
def head_revision() -> str:
    """The newest revision the code knows: the one no other revision follows.

    Read from the revision files without importing Alembic (which takes a fifth of a second), so
    that opening a database stays fast; a test checks it against Alembic's own answer.
    """
    revisions: set[str] = set()
    followed: set[str] = set()
    for path in (resource_dir("alembic") / "versions").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        revisions.update(_REVISION.findall(text))
        followed.update(_DOWN_REVISION.findall(text))
    heads = revisions - followed
    if len(heads) != 1:
        raise RuntimeError(f"the migrations must have one head, found {sorted(heads)}")
    return heads.pop()


def current_revision(conn: Connection, schema: str) -> str | None:
    """The revision a database's schema is at, or None when it was never migrated."""
    from alembic.runtime.migration import MigrationContext

    context = MigrationContext.configure(conn, opts={"version_table_schema": schema})
    return context.get_current_revision()


def prepare_sql_session(conn: Connection) -> None:
    """Set the migration's search_path (our schema, pgvector's, pg_temp), load pgvector, and ask
    for every row.

    SQL scripts create unqualified objects in our schema; functions capture this search_path
    (``SET search_path FROM CURRENT``). pgvector is loaded so that its hnsw.* settings exist
    before a function sets them (PostgreSQL refuses unknown settings to non-superusers). A script
    that rewrites existing rows (a backfill) must see them all: row-level security, forced on the
    owner too, shows the owner every row only with ``pgmem.all_rows``.
    """
    from alembic import context
    from sqlalchemy import text

    settings: Settings = context.config.attributes["settings"]
    quote = conn.dialect.identifier_preparer.quote_identifier
    vector_schema = conn.execute(
        text("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'")
    ).scalar_one()
    conn.exec_driver_sql("SELECT '[1]'::vector")
    conn.exec_driver_sql(f"SET LOCAL search_path TO {quote(settings.schema_name)}, {vector_schema}, pg_temp")
    conn.exec_driver_sql("SET LOCAL pgmem.all_rows = on")


def run_sql_script(conn: Connection, script: str) -> None:
    """Run a multi-statement SQL script on the connection's current transaction.

    The script goes to psycopg without parameters, so ``%`` in function bodies is left alone.
    """
    driver_connection = conn.connection.driver_connection
    assert driver_connection is not None
    driver_connection.execute(script)


def run_scripts(*names: str) -> None:
    """Run scripts of ``alembic/sql/`` in the migration's transaction, with the migration's search_path."""
    from alembic import op

    from hello_pgmem.db.resources import read_sql

    conn = op.get_bind()
    prepare_sql_session(conn)
    for name in names:
        run_sql_script(conn, read_sql(name))
