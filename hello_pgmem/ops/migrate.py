"""The migration as a deployment runs it (``hello-pgmem migrate``, :meth:`Store.migrate`): the
schema upgraded, the context windows of memories stored before revision 0004 made
(:mod:`hello_pgmem.ops.contexts`), then, run by a superuser, the Cypher read role prepared, and on a
Citus coordinator the schema distributed over the cluster, once."""

from __future__ import annotations

import psycopg

from hello_pgmem.core.settings import Settings
from hello_pgmem.db import migrations
from hello_pgmem.ops.citus import distribute_on_citus
from hello_pgmem.ops.contexts import Progress, fill_contexts
from hello_pgmem.ops.grants import prepare_cypher_reader


def upgrade(
    settings: Settings | None = None,
    revision: str = "head",
    distribute: bool = True,
    progress: Progress | None = None,
) -> None:
    """Migrate up to ``revision`` (idempotent: at head it does nothing). At head it makes the context
    windows a user still lacks (``progress(made, total)`` as it goes), and, run by a superuser, it
    also prepares the Cypher read role (elsewhere "hello-pgmem grant" does); on a Citus coordinator
    the schema is then distributed over the cluster, once (``distribute=False`` leaves it on the
    coordinator)."""
    settings = settings or Settings()
    migrations.upgrade(settings, revision)
    if revision != "head":
        return
    fill_contexts(settings, progress)
    with psycopg.connect(settings.database_url, connect_timeout=int(settings.connect_timeout_s)) as conn:
        prepare_cypher_reader(conn, settings)
    if distribute:
        distribute_on_citus(settings)
