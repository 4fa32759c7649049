"""Alembic environment: one transaction for the whole upgrade, version table in our schema."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool, text

from hello_pgmem.core.settings import Settings
from hello_pgmem.db.migrations import sqlalchemy_url
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


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported: run them against a database")
run_migrations_online()
