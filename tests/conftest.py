"""Fixtures: a real PostgreSQL 17 with pgvector and AGE, brought up by scripts/devdb (or the local
Citus cluster with PGMEM_TEST_DEPLOYMENT=citus: tests/deployments.py).

The session gets a fresh database, migrated to head, and drops it at the end; tests that need
their own database (migrations, missing extensions) ask ``new_database`` for one.
"""

from __future__ import annotations

import fcntl
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from hello_pgmem import Database, MemoryConfig, Settings, Store
from hello_pgmem.core.models import MEMORY_TYPES
from hello_pgmem.db.age import cypher
from hello_pgmem.dev.chroot import DevDB
from hello_pgmem.embedding import Embedder, HashingEmbedder
from hello_pgmem.embedding_queue.background import stop_workers
from hello_pgmem.graph.store import Neighbourhood
from hello_pgmem.memory import MemoryManager
from hello_pgmem.ops import grants
from hello_pgmem.tools import MemoryTool
from tests.deployments import ON_CITUS, Deployment, TestServer


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the Citus cluster, leave out the tests of Apache AGE itself (it cannot be distributed) and
    of one server's plans."""
    if not ON_CITUS:
        return
    kept = [
        item for item in items if not any(item.get_closest_marker(m) for m in ("needs_age", "one_server"))
    ]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


@pytest.fixture(scope="session")
def test_server(request: pytest.FixtureRequest) -> Iterator[TestServer]:
    """The development server after ``scripts/devdb up``, or the Citus cluster
    (PGMEM_TEST_DEPLOYMENT=citus; tests/deployments.py).

    Test runs at once on one machine share the server: a session holds the server's test lock,
    shared, or alone when it runs a test marked ``alone`` (one that drops AGE graphs, which
    another session's graph statements must not meet, apache/age#2245); so such a test waits
    for every other run's session to end, and they for it."""
    alone = any(item.get_closest_marker("alone") for item in request.session.items)
    with server_lock(exclusive=alone):
        yield TestServer.start()


@contextmanager
def server_lock(exclusive: bool) -> Iterator[None]:
    """The development server's test lock (a file lock under ``PGMEM_HOME``), held for the block."""
    home = DevDB.from_env().home
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "tests.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def server_url(test_server: TestServer) -> str:
    """The URL of the server's maintenance database (the coordinator's on a cluster)."""
    return test_server.admin_url


@pytest.fixture(scope="session")
def new_database(test_server: TestServer) -> Iterator[Callable[[], str]]:
    """A factory of empty databases (dropped at the end of the session); returns their URLs."""
    created: list[str] = []

    def make() -> str:
        url = test_server.create_database(f"pgmem_test_{uuid.uuid4().hex[:12]}")
        created.append(url)
        return url

    yield make
    for url in created:
        test_server.drop_database(url)


@pytest.fixture(scope="session")
def settings(test_server: TestServer, new_database: Callable[[], str]) -> Settings:
    """Settings for the session's database, migrated to head (and distributed on a cluster)."""
    result = test_server.settings(new_database())
    test_server.migrate(result)
    return result


@pytest.fixture(scope="session")
def database(settings: Settings) -> Iterator[Database]:
    with Database(settings) as db:
        yield db


TABLES = (
    "relations",
    "mentions",
    "entities",
    "embedding_cache",
    "chunks",
    "documents",
    "working_memories",
    "memories",
    "memory_accesses",
    "memory_embedding_queue",
    "chunk_embedding_queue",
)


@pytest.fixture(scope="module")
def deployment(test_server: TestServer, server_url: str) -> Iterator[Deployment]:
    """A database of the module's own, deployed with the owner, application and analytics roles."""
    suffix = uuid.uuid4().hex[:8]
    owner, app, analytics = (f"pgmem_{kind}_{suffix}" for kind in ("owner", "app", "analytics"))
    url = test_server.create_database(f"pgmem_security_{suffix}")
    superuser = test_server.settings(url)
    with psycopg.connect(url) as conn:
        grants.apply(conn, grants.owner_statements(conn, superuser, owner, create=True))
    as_role = {
        role: superuser.model_copy(update={"database_url": make_conninfo(url, user=role)})
        for role in (owner, app, analytics)
    }
    test_server.migrate(as_role[owner])
    with psycopg.connect(url) as conn:
        grants.apply(conn, grants.role_statements(conn, superuser, app, analytics, create=True))
    yield Deployment(as_role[owner], as_role[app], as_role[analytics], superuser, (owner, app, analytics))
    test_server.drop_database(url)
    with psycopg.connect(server_url, autocommit=True) as conn:
        for role in (app, analytics, owner):
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


@pytest.fixture(scope="module")
def app_db(deployment: Deployment) -> Iterator[Database]:
    with Database(deployment.app) as db:
        yield db


@pytest.fixture()
def conn(database: Database) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A configured connection whose work is rolled back after the test."""
    with database.connection() as connection:
        yield connection
        connection.rollback()


def wipe(db: Database) -> None:
    """Empty every table, and the AGE graph when there is one."""
    with db.connection() as connection:
        connection.execute("TRUNCATE " + ", ".join(TABLES))
        if db.graph_enabled:
            cypher(connection, db.settings.graph_name, "MATCH (n) DETACH DELETE n")


@pytest.fixture()
def clean(database: Database) -> Iterator[Database]:
    """The session database, emptied of rows after the test (for tests that commit), its
    background embedding workers stopped first: a slow model's worker of one test must not embed
    the next test's rows."""
    yield database
    stop_workers(database)
    wipe(database)


@pytest.fixture(scope="session")
def database_without_age(test_server: TestServer, new_database: Callable[[], str]) -> Iterator[Database]:
    """A second session database migrated with PGMEM_AGE=off: no AGE extension, no graph."""
    settings = Settings(database_url=new_database(), age="off")
    test_server.migrate(settings)
    with Database(settings) as db:
        yield db


@pytest.fixture(params=["citus"] if ON_CITUS else ["with_age", "without_age"])
def any_database(request: pytest.FixtureRequest, database: Database) -> Iterator[Database]:
    """Runs a test twice on one server: on the database with AGE and on the one without it (on a
    cluster, once: no database there has AGE)."""
    db = request.getfixturevalue("database_without_age") if request.param == "without_age" else database
    yield db
    stop_workers(db)
    wipe(db)


class Clock:
    """An injectable clock the tests move by hand.

    It starts at the real time (to the second), so that what the library writes with it agrees
    with the server's ``now()`` that views and maintenance read: a fixed date would make tests
    depend on the day they run.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime.now(UTC).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="session")
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture(scope="session", autouse=True)
def hashing_unless_told() -> Iterator[None]:
    """Every test embeds with the hashing embedder, as the suite's numbers assume, even where the
    ``[local]`` extra would make ``auto`` pick MiniLM; the tests of that choice say so in their
    settings. Session-wide, before the settings of the session's servers are read."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EMBED_MODEL_TYPE", "hashing")
        yield


@pytest.fixture()
def make_tool(clean: Database, embedder: HashingEmbedder, clock: Clock) -> Callable[..., MemoryTool]:
    """MemoryTool instances on the session database, with the hashing embedder and test clock."""

    def make(user_id: str = "user123", **kwargs: Any) -> MemoryTool:
        kwargs.setdefault("embedder", embedder)
        return MemoryTool(user_id=user_id, database=clean, clock=clock, **kwargs)

    return make


@pytest.fixture()
def make_manager(clean: Database, embedder: HashingEmbedder, clock: Clock) -> Callable[..., MemoryManager]:
    """A user's memory through the front door (``Store.memory``) on the session database, on the
    test clock; ``enable_<type>`` flags choose the types as MemoryManager's do."""

    def make(
        user_id: str = "alice",
        *,
        session_id: str | None = None,
        config: MemoryConfig | None = None,
        embedder: Embedder = embedder,
        enable_working: bool = True,
        enable_episodic: bool = True,
        enable_semantic: bool = True,
        enable_perceptual: bool = False,
    ) -> MemoryManager:
        flags = (enable_working, enable_episodic, enable_semantic, enable_perceptual)
        types = [kind for kind, on in zip(MEMORY_TYPES, flags, strict=True) if on]
        store = Store(database=clean, embedder=embedder)
        return store.memory(user_id, session_id, types=types, config=config, clock=clock)

    return make


def row_counts(db: Database) -> dict[str, int]:
    """Rows per table, to prove an operation changed nothing."""
    with db.connection() as conn:
        return {t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in TABLES}  # type: ignore[index]


def table_digest(db: Database) -> str:
    """A digest of every row of the memory tables (content, importance, metadata, type)."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM ("
            " SELECT user_id, id, memory_type, content, importance, metadata::text, forgotten_at"
            " FROM memories"
            " UNION ALL SELECT user_id, id, 'working', content, importance, metadata::text, NULL"
            " FROM working_memories) t"
        ).fetchone()
    return str(rows[0]) if rows else ""


ROOMY = MemoryConfig(working_memory_capacity=10_000, working_memory_tokens=10_000_000)
"""A memory configuration that never evicts working memory, for tests that count every row."""


def memory_copies(db: Database, user: str) -> dict[str, int]:
    """How many rows each of ``user``'s memory ids has across memories and working memory."""
    with db.transaction(user) as conn:
        rows = conn.execute(
            "SELECT id::text, count(*) FROM (SELECT id FROM memories WHERE user_id = %(u)s"
            " UNION ALL SELECT id FROM working_memories WHERE user_id = %(u)s) x GROUP BY 1",
            {"u": user},
        ).fetchall()
    return {r[0]: int(r[1]) for r in rows}


def entity_names(hood: Neighbourhood | None) -> set[str]:
    """The names of a neighbourhood's entities (there must be one)."""
    assert hood is not None, "the entity is in the graph"
    return {entity.name for entity in hood.entities}
