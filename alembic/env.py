"""Alembic environment: one transaction for the whole upgrade, version table in our schema."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool, text

from hello_pgmem.core.settings import Settings
from hello_pgmem.db.migrations import apply_live_sql, prepare_sql_session, sqlalchemy_url
from hello_pgmem.db.tables import metadata

config = context.config
settings: Settings = config.attributes.setdefault("settings", Settings())


def run_migrations_online() -> None:
    engine = create_engine(sqlalchemy_url(settings.database_url), poolclass=pool.NullPool)
    schema = settings.schema_name
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=metadata,
            version_table_schema=schema,
            transaction_per_migration=False,
        )
        # The schema is created in the same transaction as everything else: a failed first
        # migration leaves nothing behind.
        with context.begin_transaction():
            exists = connection.execute(
                text("SELECT 1 FROM pg_namespace WHERE nspname = :schema"), {"schema": schema}
            ).scalar()
            if not exists:
                quoted = connection.dialect.identifier_preparer.quote_identifier(schema)
                connection.exec_driver_sql(f"CREATE SCHEMA {quoted}")
            context.run_migrations()
            if _upgrading_to_head():
                prepare_sql_session(connection)
                apply_live_sql(connection)


def _upgrading_to_head() -> bool:
    """Whether this run upgrades to head (``hello-pgmem migrate``, or ``alembic upgrade head``): the
    files of sql/ that changed are applied then."""
    if "live_sql" in config.attributes:
        return bool(config.attributes["live_sql"])
    options = config.cmd_opts
    command = getattr(options, "cmd", None)
    name = getattr(command[0], "__name__", "") if command else ""
    return name == "upgrade" and getattr(options, "revision", None) == "head"


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported: run them against a database")
run_migrations_online()
