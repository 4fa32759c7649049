"""Migrations: up, down, up again; idempotent; nothing in public; a table changed in
hello_pgmem.db.tables without a revision is caught; a changed sql/ file is applied on upgrade."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, pool

from hello_pgmem import ConfigurationError, Settings
from hello_pgmem.db import migrations
from hello_pgmem.db.tables import metadata
from hello_pgmem.ops import migrate

# It drops an AGE graph: with other tests at once, their invalidations can hit AGE 1.5's label
# cache bug in the dropping backend ("label (relation) cache corrupted", apache/age#2245, fixed in
# 1.6). make test runs it after the parallel part.
pytestmark = pytest.mark.alone

REPO = Path(__file__).resolve().parent.parent
OBJECTS_IN_SCHEMA = """
SELECT 'table ' || relname FROM pg_class WHERE relnamespace = to_regnamespace(%(s)s)
UNION ALL SELECT 'function ' || proname FROM pg_proc WHERE pronamespace = to_regnamespace(%(s)s)
UNION ALL SELECT 'type ' || typname FROM pg_type
 WHERE typnamespace = to_regnamespace(%(s)s) AND typrelid = 0 AND typelem = 0
ORDER BY 1
"""

# Objects in public that do not belong to an extension (pgvector may live in public).
OWN_OBJECTS_IN_PUBLIC = """
SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace
  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                  AND d.objid = c.oid AND d.deptype = 'e')
UNION ALL
SELECT p.proname FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
                  AND d.objid = p.oid AND d.deptype = 'e')
"""


def objects(url: str, schema: str = "pgmem") -> list[str]:
    with psycopg.connect(url) as conn:
        return [row[0] for row in conn.execute(OBJECTS_IN_SCHEMA, {"s": schema}).fetchall()]


def graph_exists(url: str, graph: str = "pgmem_graph") -> bool:
    with psycopg.connect(url) as conn:
        return (
            conn.execute("SELECT 1 FROM ag_catalog.ag_graph WHERE name = %s", (graph,)).fetchone() is not None
        )


def test_up_down_up(new_database: Callable[[], str]) -> None:
    url = new_database()
    settings = Settings(database_url=url)
    migrate.upgrade(settings)
    first = objects(url)
    assert "table memories" in first and "function search_by_recency" in first
    assert graph_exists(url)

    migrations.downgrade(settings, "base")
    left = [name for name in objects(url) if not name.startswith("table alembic_version")]
    assert left == [], "downgrade base must leave only Alembic's version table"
    assert not graph_exists(url)

    migrate.upgrade(settings)
    assert objects(url) == first
    assert graph_exists(url)


def test_upgrade_is_idempotent(new_database: Callable[[], str]) -> None:
    url = new_database()
    settings = Settings(database_url=url)
    migrate.upgrade(settings)
    before = objects(url)
    migrate.upgrade(settings)
    assert objects(url) == before
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version_num FROM pgmem.alembic_version").fetchall() == [
            (migrations.head_revision(),)
        ]


def test_nothing_is_created_in_public(new_database: Callable[[], str]) -> None:
    url = new_database()
    migrate.upgrade(Settings(database_url=url))
    with psycopg.connect(url) as conn:
        assert conn.execute(OWN_OBJECTS_IN_PUBLIC).fetchall() == []


def test_custom_schema_and_graph_names(new_database: Callable[[], str]) -> None:
    url = new_database()
    settings = Settings(database_url=url, schema_name="agent_memory", graph_name="agent_graph")
    migrate.upgrade(settings)
    assert "table memories" in objects(url, "agent_memory")
    assert objects(url, "pgmem") == []
    assert graph_exists(url, "agent_graph")


def test_without_age_everything_but_the_graph_is_created(new_database: Callable[[], str]) -> None:
    url = new_database()
    migrate.upgrade(Settings(database_url=url, age="off"))
    assert "function search_by_recency" in objects(url)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'age'").fetchone() is None


def test_core_tables_match_the_migrated_schema(settings: Settings) -> None:
    engine = create_engine(migrations.sqlalchemy_url(settings.database_url), poolclass=pool.NullPool)
    with engine.connect() as conn, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # alembic warns that computed columns cannot be compared
        conn.exec_driver_sql("SET search_path TO pgmem, public")
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = [
            d
            for d in compare_metadata(context, metadata)
            # the migrations' own tables, and the per-model HNSW indexes register_embedding_model adds
            if not any(name in str(d) for name in ("alembic_version", "sql_applied", "_embedding_"))
        ]
    engine.dispose()
    assert diff == []


def test_an_upgrade_applies_the_sql_files_that_changed(new_database: Callable[[], str]) -> None:
    """A function changed in the database since its file was applied comes back as the file says
    once the file is recorded as changed; an unchanged file is not run again."""
    url = new_database()
    settings = Settings(database_url=url)
    migrate.upgrade(settings)
    described = "SELECT obj_description(%s::regproc, 'pg_proc')"
    with psycopg.connect(url) as conn:
        original = conn.execute(described, ("pgmem.importance_weight",)).fetchone()
        conn.execute("COMMENT ON FUNCTION pgmem.importance_weight(double precision) IS 'drifted'")
        conn.execute("COMMENT ON FUNCTION pgmem.holds_as_of IS 'drifted too'")  # temporal.sql
        conn.execute("UPDATE pgmem.sql_applied SET checksum = 'older' WHERE file = 'scoring.sql'")
    migrate.upgrade(settings)
    with psycopg.connect(url) as conn:
        assert conn.execute(described, ("pgmem.importance_weight",)).fetchone() == original
        assert conn.execute(described, ("pgmem.holds_as_of",)).fetchone() == ("drifted too",)
        assert conn.execute("SELECT count(*) FROM pgmem.sql_applied WHERE checksum = 'older'").fetchone() == (
            0,
        )
    assert set(migrations.LIVE_FILES) == {p.name for p in (REPO / "sql").glob("*.sql")}


def test_a_schema_of_an_unknown_revision_is_named(new_database: Callable[[], str]) -> None:
    url = new_database()
    settings = Settings(database_url=url)
    migrate.upgrade(settings)
    with psycopg.connect(url) as conn:
        conn.execute("UPDATE pgmem.alembic_version SET version_num = '0031'")
    with pytest.raises(ConfigurationError, match="revision this version of hello_pgmem does not know"):
        migrate.upgrade(settings)


def test_first_migration_failure_leaves_nothing(new_database: Callable[[], str]) -> None:
    url = new_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA other")
    bad = Settings(database_url=url, age="on", graph_name="x")  # AGE rejects names under 3 chars
    with pytest.raises(Exception, match="graph name"):
        migrate.upgrade(bad)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'pgmem'").fetchone() is None


def test_head_revision_is_alembics() -> None:
    from alembic.script import ScriptDirectory

    alembic_head = ScriptDirectory.from_config(migrations.alembic_config(Settings())).get_current_head()
    assert migrations.head_revision() == alembic_head


def test_a_schema_of_the_earlier_write_path_comes_up_with_its_statistics_exact(
    new_database: Callable[[], str],
) -> None:
    """Revision 0002 on a schema whose statistics were kept statement by statement (revision 0001
    as it was, made here by a downgrade): its rows keep their vectors and statistics, and the new
    write path (staged statistics, the embedding queue) holds from then on; down again, the
    earlier triggers keep the statistics again."""
    from hello_pgmem import Database, HashingEmbedder, Store
    from hello_pgmem.ops.check import check_integrity

    url = new_database()
    settings = Settings(database_url=url, embedding_queue_workers=0)
    migrate.upgrade(settings)
    migrations.downgrade(settings, "0001")
    with psycopg.connect(url) as conn:
        triggers = {r[0] for r in conn.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")}
    assert "memories_lock_writers" in triggers and "stat_changes_apply" not in triggers
    assert "table memory_embedding_queue" not in objects(url)

    def add(embed: str, user: str) -> None:
        with Database(settings.model_copy(update={"embed": embed})) as db:
            memory = Store(database=db, embedder=HashingEmbedder()).memory(user, "s1", types=["episodic"])
            memory.add_memories([f"{user} wrote note {n} about the harbour" for n in range(20)], "episodic")
            memory.update_memory(memory.retrieve_memories("harbour", limit=1)[0].id, content="a new text")

    def add_at_0001(user: str) -> None:
        """Rows written as the code of revision 0001 wrote them (it cannot open a schema at 0001)."""
        vectors = HashingEmbedder().encode_documents([f"{user} wrote note {n}" for n in range(20)])
        with psycopg.connect(url) as conn:
            conn.execute("SELECT set_config('search_path', 'pgmem, public', true)")
            conn.execute("SELECT set_config('pgmem.user_id', %s, true)", (user,))
            conn.execute("SELECT register_embedding_model('hashing-v1-384', 384)")
            for n, vector in enumerate(vectors):
                conn.execute(
                    "INSERT INTO memories (user_id, id, memory_type, content, session_id, embedding, embedding_model)"
                    " VALUES (%s, gen_random_uuid(), 'episodic', %s, 's1', %s::vector, 'hashing-v1-384')",
                    (user, f"{user} wrote note {n}", str(vector.tolist())),
                )
            conn.execute(
                "UPDATE memories SET content = 'a new text' WHERE user_id = %s AND content LIKE '%%note 3'",
                (user,),
            )
            conn.execute("DELETE FROM memories WHERE user_id = %s AND content LIKE '%%note 4'", (user,))

    add_at_0001("before")  # kept by the earlier triggers
    migrate.upgrade(settings)
    with Database(settings) as db:
        assert check_integrity(db).ok, check_integrity(db).text()
    add("queue", "after")
    with Database(settings) as db:
        assert Store(database=db, embedder=HashingEmbedder()).wait_for_embeddings(everyone=True) > 0
        report = check_integrity(db)
        assert report.ok, report.text()
    migrations.downgrade(settings, "0001")
    add_at_0001("down")
    migrate.upgrade(settings)  # the checker's code reads the schema at its own revision
    with Database(settings) as db:
        report = check_integrity(db)
        assert report.ok, report.text()


def test_revision_0003_reads_the_headings_into_the_chunks_lexemes(new_database: Callable[[], str]) -> None:
    """Revision 0003 recomputes the lexemes of the chunks stored before it (their titles' words
    found, the namespace's totals exact), and down again reads the text alone."""
    from hello_pgmem import Database
    from hello_pgmem.ops.check import check_integrity

    url = new_database()
    settings = Settings(database_url=url, embedding_queue_workers=0)
    migrate.upgrade(settings)
    migrations.downgrade(settings, "0002")
    with psycopg.connect(url) as conn:  # chunks as the code of revision 0002 wrote them
        conn.execute("SELECT set_config('search_path', 'pgmem, public', true)")
        conn.execute("SELECT set_config('pgmem.namespace', 'ops', true)")
        conn.execute(
            "INSERT INTO documents (namespace, id, content_hash, chunk_count) VALUES ('ops', 'guide', '\\x00', 2)"
        )
        for position, text in enumerate(["# Kraken rollout\n\nFirst the cranes.", "Then the cables."]):
            conn.execute(
                "INSERT INTO chunks (namespace, id, document_id, position, content, content_hash, heading_path,"
                " start_char, end_char, token_count) VALUES ('ops', gen_random_uuid(), 'guide', %s, %s,"
                " '\\x00', '{Kraken rollout}', 0, 1, 4)",
                (position, text),
            )

    def titled() -> list[bool]:
        with psycopg.connect(url) as conn:
            rows = conn.execute(
                "SELECT lexemes @@ to_tsquery('simple', 'kraken') FROM pgmem.chunks ORDER BY position"
            ).fetchall()
        return [r[0] for r in rows]

    assert titled() == [True, False], "at 0002 only the first chunk's text names the title"
    migrate.upgrade(settings)
    assert titled() == [True, True]
    with Database(settings) as db:
        report = check_integrity(db)
        assert report.ok, report.text()
    migrations.downgrade(settings, "0002")
    assert titled() == [True, False]


def test_revision_0004_makes_the_windows_of_memories_stored_before_it(
    new_database: Callable[[], str],
) -> None:
    """Memories stored before revision 0004 (made here by going down to 0003, which drops the
    windows and counts forgotten versions in the totals again) get their windows from the migrate
    after the revision, and totals of live memories; a search finds them by a neighbour's words."""
    from hello_pgmem import Database, HashingEmbedder, Store
    from hello_pgmem.ops.check import check_integrity

    url = new_database()
    settings = Settings(database_url=url, embedding_queue_workers=0)
    migrate.upgrade(settings)
    with Database(settings) as db:
        memory = Store(database=db, embedder=HashingEmbedder()).memory("old", "s1", types=["episodic"])
        ids = memory.add_memories([f"note {n} of the harbour log" for n in range(30)], importance=0.5)
        memory.add_memories(["the kraken was seen at dawn"], importance=0.5)
        memory.update_memory(ids[3], content="note three was rewritten", correction=True)
    migrations.downgrade(settings, "0003")
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT to_regclass('pgmem.memory_contexts')").fetchone() == (None,)
        assert conn.execute("SELECT memories FROM pgmem.memory_text_totals").fetchone() == (32,)
    seen: list[tuple[int, int]] = []
    migrate.upgrade(settings, progress=lambda made, total: seen.append((made, total)))
    assert seen and seen[-1] == (31, 31)
    with Database(settings) as db:
        report = check_integrity(db)
        assert report.ok, report.text()
        memory = Store(database=db, embedder=HashingEmbedder()).memory("old", "s1", types=["episodic"])
        hits = memory.retrieve_memories("kraken", limit=3, scoring="lexical", track_access=False)
        assert hits[0].content == "the kraken was seen at dawn" and len(hits) == 3  # and two before it
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT memories, contexts_ready FROM pgmem.memory_text_totals").fetchone() == (
            31,
            True,
        )
