"""Tenant isolation enforced by PostgreSQL: row-level security and the three roles.

The deployment is built as docs/security.md tells a DBA to: a superuser prepares the owner
(``grant --owner``), the owner migrates, a superuser grants the application and analytics roles.
Every test here then connects as one of those roles, never as a superuser.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from hello_pgmem import (
    ConfigurationError,
    Database,
    HashingEmbedder,
    InvalidInputError,
    KnowledgeBase,
)
from hello_pgmem.cli import main
from hello_pgmem.memory import MemoryManager, MemorySearch
from hello_pgmem.ops import grants, migrate
from hello_pgmem.ops.check import check_integrity
from hello_pgmem.ops.doctor import diagnose
from hello_pgmem.ops.maintain import maintain
from tests.deployments import ON_CITUS, Deployment, TestServer

USER_TABLES = ("memories", "working_memories", "entities", "mentions", "relations")
ALICE_FACTS = ("Alice works at Acme in Berlin", "Alice likes hiking in the Alps")
BOB_FACTS = ("Bob works at Globex in Paris", "Bob likes sailing in Brittany")


@pytest.fixture(scope="module")
def populated(app_db: Database) -> dict[str, MemoryManager]:
    """Alice and Bob, each with semantic and working memories and a graph, written by the app role."""
    embedder = HashingEmbedder()
    managers = {}
    for user, facts in (("alice", ALICE_FACTS), ("bob", BOB_FACTS)):
        manager = MemoryManager(user_id=user, database=app_db, embedder=embedder)
        for fact in facts:
            manager.add_memory(fact, memory_type="semantic", importance=0.8)
        manager.add_memory(f"{user} is chatting right now", memory_type="working")
        managers[user] = manager
    for namespace in ("team_a", "team_b"):
        KnowledgeBase(app_db, embedder, namespace).add_text(
            f"# {namespace}\n\nThe handbook of {namespace} about Berlin.", document_id="handbook"
        )
    return managers


def scalar(db: Database, query: str, user_id: str | None = None, **scope: Any) -> Any:
    with db.transaction(user_id, **scope) as conn:
        row = conn.execute(query).fetchone()
    assert row is not None
    return row[0]


def test_the_app_role_is_not_privileged(deployment: Deployment, app_db: Database) -> None:
    with psycopg.connect(deployment.app.database_url) as conn:
        row = conn.execute(
            "SELECT rolsuper, rolbypassrls, rolcreaterole FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        owners = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'pgmem' AND tableowner = current_user"
        ).fetchone()
    assert row == (False, False, False)
    assert owners == (0,)


@pytest.mark.parametrize("table", USER_TABLES)
def test_a_transaction_without_a_user_sees_no_rows(
    populated: dict[str, MemoryManager], app_db: Database, table: str
) -> None:
    with psycopg.connect(app_db.settings.database_url) as conn:  # not even the library's setup
        assert conn.execute(
            sql.SQL("SELECT count(*) FROM pgmem.{}").format(sql.Identifier(table))
        ).fetchone() == (0,)
    assert scalar(app_db, f"SELECT count(*) FROM {table}") == 0
    alice = scalar(app_db, f"SELECT count(DISTINCT user_id) FROM {table}", "alice")
    assert alice == 1, "alice's transaction sees alice's rows"
    assert scalar(app_db, f"SELECT count(*) FROM {table} WHERE user_id = 'bob'", "alice") == 0


def test_a_query_that_forgets_its_user_filter_returns_only_the_current_user(
    populated: dict[str, MemoryManager], app_db: Database
) -> None:
    with app_db.transaction("alice") as conn:
        contents = {r[0] for r in conn.execute("SELECT content FROM memories")}
        vector_hits = conn.execute(
            "SELECT user_id FROM memories ORDER BY embedding <=> (SELECT embedding FROM memories LIMIT 1)"
        ).fetchall()
    assert contents == {*ALICE_FACTS}
    assert {r[0] for r in vector_hits} == {"alice"}
    found = populated["alice"].retrieve_memories("works at in Paris Globex Bob", limit=10)
    assert found and {m.user_id for m in found} == {"alice"}


def test_a_user_cannot_write_rows_of_another(populated: dict[str, MemoryManager], app_db: Database) -> None:
    bob_before = scalar(app_db, "SELECT count(*) FROM memories", "bob")
    refused = pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security")
    with refused, app_db.transaction("alice") as conn:
        conn.execute(
            "INSERT INTO memories (user_id, id, memory_type, content, importance, created_at,"
            " session_id) VALUES ('bob', gen_random_uuid(), 'semantic', 'planted', 0.5, now(), 's')"
        )
    rehome: tuple[type[psycopg.Error], str] = (psycopg.errors.InsufficientPrivilege, "row-level security")
    if ON_CITUS:  # the distribution column cannot change at all there
        rehome = (psycopg.errors.FeatureNotSupported, "partition value")
    with pytest.raises(rehome[0], match=rehome[1]), app_db.transaction("alice") as conn:
        conn.execute("UPDATE memories SET user_id = 'bob'")
    with app_db.transaction("alice") as conn:
        assert conn.execute("UPDATE memories SET importance = importance WHERE user_id = 'bob'").rowcount == 0
        assert conn.execute("DELETE FROM memories WHERE user_id = 'bob'").rowcount == 0
    assert scalar(app_db, "SELECT count(*) FROM memories", "bob") == bob_before


def test_the_app_role_cannot_ask_for_all_rows_nor_change_the_schema(
    populated: dict[str, MemoryManager], app_db: Database
) -> None:
    assert scalar(app_db, "SELECT count(*) FROM memories", all_rows=True) == 0
    for statement in (
        "TRUNCATE memories",
        "ALTER TABLE memories DISABLE ROW LEVEL SECURITY",
        "DROP POLICY user_rows ON memories",
        "CREATE TABLE pgmem.sneaky (x int)",
        "INSERT INTO embedding_models (model, dimension, index_suffix) VALUES ('m', 3, 'x')",
    ):
        with pytest.raises(psycopg.errors.InsufficientPrivilege), app_db.transaction("alice") as conn:
            conn.execute(statement)


def test_rag_rows_are_scoped_to_their_namespace(
    populated: dict[str, MemoryManager], app_db: Database
) -> None:
    assert scalar(app_db, "SELECT count(*) FROM chunks") == 0
    assert scalar(app_db, "SELECT count(DISTINCT namespace) FROM chunks", namespace="team_a") == 1
    assert (
        scalar(app_db, "SELECT count(*) FROM documents WHERE namespace = 'team_b'", namespace="team_a") == 0
    )
    hits = KnowledgeBase(app_db, HashingEmbedder(), "team_a").search("handbook Berlin", top_k=5)
    assert hits and all("team_a" in h.content for h in hits)
    assert scalar(app_db, "SELECT count(*) FROM chunks", "alice") == 0, "a user is not a namespace"


def test_views_answer_for_the_current_user_only(
    populated: dict[str, MemoryManager], app_db: Database
) -> None:
    assert scalar(app_db, "SELECT count(*) FROM memory_stats") == 0
    assert scalar(app_db, "SELECT string_agg(DISTINCT user_id, ',') FROM memory_stats", "bob") == "bob"
    assert scalar(app_db, "SELECT count(*) FROM entity_stats", "bob") > 0
    assert scalar(app_db, "SELECT count(*) FROM rag_documents", namespace="team_b") == 1


@pytest.mark.needs_age
def test_cypher_through_the_library_is_scoped_to_the_user(
    populated: dict[str, MemoryManager], app_db: Database
) -> None:
    """The read role's policies on the AGE label tables show the passthrough one user
    (docs/security.md; tests/test_isolation_attacks.py tries harder)."""
    alice = populated["alice"]
    rows = alice.cypher("MATCH (e:Entity {user_id: $user_id}) RETURN e.user_id", columns=("u",))
    assert rows and {str(r[0]) for r in rows} == {"alice"}
    for unscoped in (
        "MATCH (e:Entity) RETURN e.user_id",
        "MATCH (e:Entity {user_id: 'bob'}) RETURN e.user_id",
    ):
        assert {str(r[0]) for r in alice.cypher(unscoped)} <= {"alice"}
    with pytest.raises(InvalidInputError, match="must only read"):
        alice.cypher("MATCH (e:Entity {user_id: $user_id}) SET e.user_id = 'bob'")


def test_the_owner_is_bound_by_forced_row_level_security(
    populated: dict[str, MemoryManager], deployment: Deployment
) -> None:
    with Database(deployment.owner) as owner:
        assert scalar(owner, "SELECT count(*) FROM memories") == 0, "FORCE: the owner sees nothing by default"
        assert scalar(owner, "SELECT count(*) FROM memories", "bob") == len(BOB_FACTS)
        assert scalar(owner, "SELECT count(DISTINCT user_id) FROM memories", all_rows=True) == 2


def test_analytics_reads_every_user_only_when_it_asks_and_never_writes(
    populated: dict[str, MemoryManager], deployment: Deployment
) -> None:
    with psycopg.connect(deployment.analytics.database_url, autocommit=not ON_CITUS) as conn:
        conn.execute("SET search_path = pgmem")
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)
        if ON_CITUS:  # only SET LOCAL in a transaction reaches the workers (docs/citus.md)
            conn.execute("SET LOCAL citus.propagate_set_commands = 'local'")
            conn.execute("SET LOCAL pgmem.all_rows = on")
        else:
            conn.execute("SET pgmem.all_rows = on")
        assert conn.execute("SELECT count(DISTINCT user_id) FROM memories").fetchone() == (2,)
        users = conn.execute("SELECT user_id, sum(live) FROM memory_stats GROUP BY 1 ORDER BY 1").fetchall()
        assert [u for u, _ in users] == ["alice", "bob"]
        assert conn.execute("SELECT count(DISTINCT namespace) FROM chunks").fetchone() == (2,)
        refused = ["DELETE FROM memories", "UPDATE memories SET content = 'x'"]
        if not ON_CITUS:  # no Cypher: AGE 1.5 writes skip privileges (no AGE on a cluster)
            refused.append("SELECT 1 FROM pgmem_graph._ag_label_vertex")
        for statement in refused:
            with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
                conn.execute(statement)


def test_cross_user_operations_refuse_a_role_that_sees_one_user(
    populated: dict[str, MemoryManager], app_db: Database, deployment: Deployment
) -> None:
    """Run as the application role, check and maintain would see nothing and report all clear."""
    with pytest.raises(ConfigurationError, match="run it as the schema owner"):
        check_integrity(app_db)
    with pytest.raises(ConfigurationError, match="run it as the schema owner"):
        maintain(app_db)
    with Database(deployment.owner) as owner:
        report = check_integrity(owner)
    assert report.ok, report.text()


def test_doctor_approves_the_app_role(populated: dict[str, MemoryManager], deployment: Deployment) -> None:
    findings = diagnose(deployment.app)
    assert not [f for f in findings if f.level == "error"], findings
    assert [f.level for f in findings if f.check == "rls"] == ["ok"], "no bypass warning for the app role"
    assert [f.level for f in findings if f.check == "grants"] == ["ok"]
    if deployment.app.age != "off" and not ON_CITUS:
        assert [f.level for f in findings if f.check == "cypher"] == ["ok"], findings


def test_grant_prints_idempotent_sql(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    _, app, analytics = deployment.roles
    monkeypatch.setenv("DATABASE_URL", deployment.superuser.database_url)
    assert main(["grant", "--app", app, "--analytics", analytics]) == 0
    script = capsys.readouterr().out
    assert 'GRANT SELECT, INSERT, UPDATE, DELETE ON "pgmem"."memories"' in script
    assert "ALTER POLICY" not in script, "the analytics role already holds the all_rows policies"
    assert main(["grant", "--app", app, "--apply"]) == 0, "re-applying changes nothing and fails nowhere"
    assert main(["grant", "--app", "bad name; DROP TABLE x"]) == 1
    assert "app: must be a role name" in capsys.readouterr().err
    monkeypatch.setenv("DATABASE_URL", deployment.app.database_url)  # not allowed to grant
    assert main(["grant", "--app", app, "--apply"]) == 1
    assert "run hello-pgmem grant --apply as a superuser" in capsys.readouterr().err


def test_a_command_the_app_role_may_not_run_is_one_line_not_a_traceback(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("DATABASE_URL", deployment.app.database_url)
    assert main(["--user", "mia", "token", "create"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: permission denied") and "Traceback" not in err
    assert "hint: this command needs a role" in err and len(err.splitlines()) == 2


@pytest.mark.one_server
def test_an_upgrade_keeps_the_app_role_able_to_add_and_search(
    test_server: TestServer, server_url: str
) -> None:
    """An upgrade re-applies the sql/ files that changed (CREATE OR REPLACE keeps each function's
    grants): a role granted before the upgrade still adds, updates and searches after it, without
    running grant again."""
    suffix = uuid.uuid4().hex[:8]
    owner, app = f"pgmem_owner_{suffix}", f"pgmem_app_{suffix}"
    url = test_server.create_database(f"pgmem_upgrade_{suffix}")
    superuser = test_server.settings(url)
    as_owner, as_app = (
        superuser.model_copy(update={"database_url": make_conninfo(url, user=role)}) for role in (owner, app)
    )
    try:
        with psycopg.connect(url) as conn:
            grants.apply(conn, grants.owner_statements(conn, superuser, owner, create=True))
        migrate.upgrade(as_owner)
        with psycopg.connect(url) as conn:
            grants.apply(conn, grants.role_statements(conn, superuser, app, None, create=True))
        with psycopg.connect(url) as conn:  # as if search.sql and text.sql had changed since
            conn.execute(
                "UPDATE pgmem.sql_applied SET checksum = 'older' WHERE file IN ('search.sql', 'text.sql')"
            )
        migrate.upgrade(as_owner)
        with psycopg.connect(url) as conn:
            kept = conn.execute("SELECT count(*) FROM pgmem.sql_applied WHERE checksum = 'older'").fetchone()
        assert kept == (0,)
        with Database(as_app) as db:
            manager = MemoryManager(user_id="carol", database=db, embedder=HashingEmbedder())
            manager.add_memories(["Carol: first", "Carol: second"], "episodic")
            moved = manager.add_memory("Carol lives in Oslo", "semantic")
            manager.update_memory(moved, "Carol lives in Rome")
            found = manager.retrieve_memories("where does Carol live?", limit=1)
            with db.transaction("carol") as conn:
                single = conn.execute("SELECT bool_and(single_valued) FROM relations").fetchone()
        assert found[0].content == "Carol lives in Rome" and single == (True,)
    finally:
        test_server.drop_database(url)
        with psycopg.connect(server_url, autocommit=True) as conn:
            for role in (app, owner):
                conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def test_the_library_says_when_row_level_security_does_not_bind_its_role(
    deployment: Deployment, caplog: pytest.LogCaptureFixture
) -> None:
    """One warning line when the library connects as a superuser (or a BYPASSRLS role) to a
    database that is not the development server; none as the application role."""
    import logging

    with caplog.at_level(logging.INFO, logger="hello_pgmem.db.database"):
        with Database(deployment.superuser) as db:
            db.open()
        with Database(deployment.app) as db:
            db.open()
    said = [r for r in caplog.records if "row-level security does not bind" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.WARNING]
    assert "a superuser" in said[0].getMessage()


def test_a_search_s_sql_runs_in_psql_as_printed_for_the_app_role(
    populated: dict[str, MemoryManager], deployment: Deployment
) -> None:
    """What --show-sql and the web view print runs in psql as it is, as the application role under
    row-level security: the same memories, in the same order, as the library's search."""
    from psycopg.conninfo import conninfo_to_dict

    from hello_pgmem.dev.chroot import DevDB, run_in_root

    alice = populated["alice"]
    question = "Where does Alice work?"
    found = alice.retrieve_memories(question, memory_types=["semantic"], limit=3, track_access=False)
    shown = alice.search_sql(MemorySearch(question, ["semantic"], 3))
    with alice.db.connection() as conn:
        literal = shown.literal(conn)
    root = DevDB.from_env()
    script = root.root / "tmp" / f"search-{uuid.uuid4().hex[:8]}.sql"
    script.write_text(literal)
    try:
        where = conninfo_to_dict(deployment.app.database_url)
        ran = run_in_root(
            root, "psql", "-X", "-A", "-t", "-F", "|", "-v", "ON_ERROR_STOP=1",
            "-h", str(where["host"]), "-p", str(where["port"]), "-U", str(where["user"]), "-d", str(where["dbname"]),
            "-f", f"/tmp/{script.name}",
        )  # fmt: skip
    finally:
        script.unlink()
    ids = [line.split("|")[0] for line in ran.stdout.splitlines() if line.count("|") > 5]
    assert ids == [str(item.id) for item in found] and ids
