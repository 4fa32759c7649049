"""Attacks on tenant isolation, tried as the application role of a deployment built the documented
way: each must end in a refusal or in zero rows of another user.

Every Cypher attack carries ``$user_id`` somewhere (a comment, a bound-but-unused parameter),
which is all the passthrough once asked for: PostgreSQL's policies on the label tables, not the
query's text, keep the caller to its own graph now.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg import sql

from hello_pgmem import Database, GraphError, HashingEmbedder, InvalidInputError, KnowledgeBase
from hello_pgmem.db.age import cypher
from hello_pgmem.memory import MemoryManager
from tests.deployments import Deployment

pytestmark = pytest.mark.needs_age

BOB_MARKS = ("bob", "Mallory", "Initech", "Globex")


@pytest.fixture(scope="module")
def graphs(app_db: Database) -> dict[str, MemoryManager]:
    """Alice and Bob with a knowledge graph each, written by the application role."""
    embedder = HashingEmbedder()
    managers = {}
    for user, fact in (
        ("alice", "Alice Jones works at Acme in Berlin"),
        ("bob", "Mallory Smith works at Initech. Bob works at Globex"),
    ):
        managers[user] = MemoryManager(user_id=user, database=app_db, embedder=embedder)
        managers[user].add_memory(fact, memory_type="semantic", importance=0.8)
    return managers


def bob_ids(deployment: Deployment, kind: str) -> list[int]:
    """The graph ids of Bob's vertices (``v``) or edges (``e``), read as a superuser."""
    table = "_ag_label_vertex" if kind == "v" else "_ag_label_edge"
    graph = deployment.superuser.graph_name
    with psycopg.connect(deployment.superuser.database_url) as conn:
        rows = conn.execute(
            sql.SQL("SELECT id::text::bigint FROM {} WHERE properties OPERATOR(ag_catalog.@>) %s").format(
                sql.Identifier(graph, table)
            ),
            ('{"user_id": "bob"}',),
        ).fetchall()
    return [int(r[0]) for r in rows]


def foreign(rows: list[tuple[Any, ...]]) -> list[str]:
    return [mark for mark in BOB_MARKS if mark in repr(rows)]


READS = [
    # the three of the report: a comment, a dead condition, a parameter of another name
    ("MATCH (e:Entity) RETURN [e.user_id, e.name] // $user_id", {}),
    ("MATCH (e:Entity) WHERE $user_id IS NOT NULL RETURN [e.user_id, e.name]", {}),
    ("MATCH (e:Entity {user_id: $user_idx}) RETURN [e.user_id, e.name]", {"user_idx": "bob"}),
    # the user's id passed again as a parameter: bound to the caller whatever is given
    ("MATCH (e:Entity {user_id: $user_id}) RETURN [e.user_id, e.name]", {"user_id": "bob"}),
    ("MATCH (e:Entity) WHERE e.user_id = 'bob' RETURN e.name /* $user_id */", {}),
    ("MATCH (n) RETURN n // $user_id", {}),
    ("MATCH (m:Memory) RETURN m // $user_id", {}),
    ("MATCH ()-[r]->() RETURN r // $user_id", {}),
    ("MATCH ()-[r:MENTIONS]->(e) RETURN [r, e] // $user_id", {}),
    ("MATCH p = ()-[*]-() RETURN p // $user_id", {}),
    ("MATCH p = (a:Entity)-[*1..3]->(b) RETURN p // $user_id", {}),
    ("OPTIONAL MATCH (e:Entity {user_id: 'bob'}) RETURN e // $user_id", {}),
    ("MATCH (e:Entity {user_id: $user_id}) RETURN e UNION MATCH (e:Entity) RETURN e", {}),
    ("MATCH (a)-[r]->(b) RETURN [startNode(r), endNode(r)] // $user_id", {}),
    ("MATCH (e:Entity) RETURN collect(e.name) // $user_id", {}),
    ("MATCH (e:_ag_label_vertex) RETURN e // $user_id", {}),
]


@pytest.mark.parametrize(("query", "params"), READS)
def test_cypher_reads_see_only_the_callers_graph(
    graphs: dict[str, MemoryManager], query: str, params: dict[str, Any]
) -> None:
    rows = graphs["alice"].cypher(query, params)
    assert foreign(rows) == [], f"{query!r} returned another user's graph: {rows!r}"


def test_the_caller_still_sees_its_own_graph(graphs: dict[str, MemoryManager]) -> None:
    rows = graphs["alice"].cypher("MATCH (e:Entity) RETURN e.user_id, e.name", columns=("u", "n"))
    assert rows and {r[0] for r in rows} == {"alice"}
    assert "Acme" in {r[1] for r in rows}
    bob = graphs["bob"].cypher("MATCH (e:Entity) RETURN e.name")
    assert {"Mallory Smith", "Initech"} <= {r[0] for r in bob}


def test_vertices_named_by_id_are_not_found(graphs: dict[str, MemoryManager], deployment: Deployment) -> None:
    ids = bob_ids(deployment, "v")
    assert ids
    rows = graphs["alice"].cypher("MATCH (n) WHERE id(n) IN $ids RETURN n // $user_id", {"ids": ids})
    assert rows == []


FORGED = [
    # AGE reads the label tables by id for these, past the policies: refused on the text
    "WITH {{id: {e}, label: 'RELATED', start_id: {v}, end_id: {v}, properties: {{}}}}::edge AS r "
    "RETURN startNode(r), endNode(r) // $user_id",
    "WITH {{id: {e}, label: 'RELATED', start_id: {v}, end_id: {v}, properties: {{}}}} :: EDGE AS r "
    "RETURN endNode(r) // $user_id",
    "WITH {{id: {e}, label: 'RELATED', start_id: {v}, end_id: {v}, properties: {{}}}}::`edge` AS r "
    "RETURN endNode(r) // $user_id",
    "WITH {{id: {v}, label: 'Entity', properties: {{}}}}::vertex AS v RETURN vertex_stats(v) // $user_id",
    "RETURN [{{id: {v}, label: 'Entity', properties: {{}}}}]::path // $user_id",
]


@pytest.mark.parametrize("template", FORGED)
def test_forged_graph_values_are_refused(
    graphs: dict[str, MemoryManager],
    deployment: Deployment,
    template: str,
) -> None:
    query = template.format(v=bob_ids(deployment, "v")[0], e=bob_ids(deployment, "e")[0])
    with pytest.raises(InvalidInputError, match="query"):
        graphs["alice"].cypher(query)


@pytest.mark.parametrize(
    "query",
    [
        "EXPLAIN MATCH (e:Entity) RETURN e // $user_id",
        "EXPLAIN ANALYZE MATCH (e:Entity) RETURN e // $user_id",
        "explain (FORMAT JSON) MATCH (e:Entity) RETURN e // $user_id",
        "EXPLAIN VERBOSE MATCH (e:Entity)-[r]->(t) RETURN r // $user_id",
    ],
)
def test_a_plan_is_never_shown_its_estimates_count_every_user(
    graphs: dict[str, MemoryManager], query: str
) -> None:
    """A plan's row estimates (and ANALYZE's timing) tell how many rows every user has in a label:
    EXPLAIN is refused on the text, and nothing of a value AGE's answer could not be read as is
    said back."""
    with pytest.raises(InvalidInputError, match="may not EXPLAIN"):
        graphs["alice"].cypher(query)


def test_an_unreadable_value_is_not_repeated_in_the_error() -> None:
    from hello_pgmem.core.errors import GraphError
    from hello_pgmem.db.age import parse_agtype

    with pytest.raises(GraphError, match="unexpected value") as caught:
        parse_agtype("Seq Scan on _ag_label_vertex  (cost=0.00..18.50 rows=4242 width=40)")
    assert "4242" not in str(caught.value)


FUNCTION_CALLS = [
    "RETURN pg_catalog.current_setting('pgmem.user_id') // $user_id",
    "RETURN `pg_catalog`.`current_user`() // $user_id",
    "RETURN pg_catalog . query_to_xml('select 1', true, false, '') // $user_id",
    "WITH pg_catalog.set_config('role', 'postgres', true) AS x MATCH (e) RETURN e // $user_id",
    "RETURN pg_catalog /* a comment */ . version() // $user_id",
    "UNWIND vle('pgmem_graph', 1, null, {}, 1, 3, 1) AS p RETURN p // $user_id",
    "RETURN age_vertex_stats('pgmem_graph', {}) // $user_id",
]


@pytest.mark.parametrize("query", FUNCTION_CALLS)
def test_sql_and_internal_functions_are_refused(graphs: dict[str, MemoryManager], query: str) -> None:
    with pytest.raises(InvalidInputError, match="query"):
        graphs["alice"].cypher(query)


WRITES = [
    "MATCH (e:Entity) DETACH DELETE e // $user_id",
    "MATCH (e:Entity) /* read */ SET e.user_id = 'alice' // $user_id",
    "MATCH (e:Entity) REMOVE e.name // $user_id",
    "CREATE (:Entity {user_id: 'bob', name: 'planted'}) // $user_id",
    "MERGE (:Entity {user_id: 'bob', name: 'planted'}) // $user_id",
]


@pytest.mark.parametrize("query", WRITES)
def test_writes_are_refused_and_change_nothing(
    graphs: dict[str, MemoryManager],
    deployment: Deployment,
    query: str,
) -> None:
    before = bob_ids(deployment, "v"), bob_ids(deployment, "e")
    with pytest.raises(InvalidInputError, match="must only read"):
        graphs["alice"].cypher(query)
    assert (bob_ids(deployment, "v"), bob_ids(deployment, "e")) == before


def test_the_read_role_cannot_write_even_past_the_text_check(
    graphs: dict[str, MemoryManager],
    deployment: Deployment,
    app_db: Database,
) -> None:
    """Defence in depth: the read role holds no INSERT privilege and its scans see one user, so
    a write that slipped past the text check could neither plant rows nor reach another user's."""
    reader = deployment.app.cypher_role
    graph = deployment.app.graph_name
    before = bob_ids(deployment, "v")
    with app_db.transaction("alice") as conn:
        conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(reader)))
        cypher(conn, graph, "MATCH (e:Entity) WHERE e.user_id = 'bob' DETACH DELETE e")
        with pytest.raises(GraphError, match="permission denied"):
            cypher(conn, graph, "CREATE (:Entity {user_id: 'bob', name: 'planted'})")
    assert bob_ids(deployment, "v") == before


def test_the_passthrough_refuses_to_run_without_the_policies(
    graphs: dict[str, MemoryManager],
    deployment: Deployment,
) -> None:
    """Fail closed: a label table without the read role's policy stops every passthrough query."""
    superuser = deployment.superuser
    with psycopg.connect(superuser.database_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP POLICY cypher_reader_scope ON {}").format(
                sql.Identifier(superuser.graph_name, "Memory")
            )
        )
        try:
            with pytest.raises(GraphError, match="Cypher passthrough is off"):
                graphs["alice"].cypher("MATCH (e:Entity) RETURN e.name")
        finally:
            conn.execute(
                sql.SQL("SELECT {}(%s, %s)").format(sql.Identifier(superuser.schema_name, "secure_graph")),
                (superuser.graph_name, superuser.cypher_role),
            )
    assert graphs["alice"].cypher("MATCH (e:Entity) RETURN e.name")


def test_the_app_role_does_not_inherit_the_read_roles_policies(
    graphs: dict[str, MemoryManager],
    deployment: Deployment,
    app_db: Database,
) -> None:
    """The application is a member of the read role without inheriting it: the projection writes
    and the library's own reads stay unfiltered and keep their indexes."""
    with psycopg.connect(deployment.app.database_url) as conn:
        row = conn.execute(
            "SELECT m.inherit_option, m.set_option FROM pg_auth_members m "
            "WHERE m.roleid = %s::regrole AND m.member = current_user::regrole",
            (deployment.app.cypher_role,),
        ).fetchone()
    assert row == (False, True)


def test_erase_takes_the_users_tokens_and_rag_questions_and_names_what_it_left(
    deployment: Deployment,
) -> None:
    """As the application role: erasing a user deletes its tokens and what the retrieval log
    holds of it, RAG questions included (logged under the user who asked), and says which shared
    namespaces keep their documents."""
    from hello_pgmem.access import create_token, resolve_token
    from hello_pgmem.ops.erase import erase_report
    from hello_pgmem.tools.rag_tool import RAGTool

    with Database(deployment.owner) as owner_db:
        token, _ = create_token(owner_db, "nora", ["nora_team"])
    logged = deployment.app.model_copy(update={"retrieval_log": True})
    with Database(logged) as db:
        tool = RAGTool(rag_namespace="nora_team", database=db, embedder=HashingEmbedder(), user_id="nora")
        tool.run("add_text", text="# Plans\n\nThe offsite is in Lisbon.", document_id="plans")
        assert "Lisbon" in tool.run("search", query="where is the offsite")
        counts, left = erase_report(db, "nora")
        assert resolve_token(db, token) is None, "an erased user's token no longer works"
        with db.transaction("nora") as conn:
            row = conn.execute("SELECT count(*) FROM retrieval_log WHERE query LIKE '%offsite%'").fetchone()
        with db.transaction(namespace="nora_team") as conn:
            by_namespace = conn.execute(
                "SELECT count(*) FROM retrieval_log WHERE query LIKE '%offsite%'"
            ).fetchone()
    assert counts["access_tokens"] == 1 and counts["retrieval_log"] >= 1
    assert row == (0,) and by_namespace == (0,), "no question of the erased user is left in the log"
    assert left == ["nora_team"]


def test_the_embedding_cache_is_not_shared_across_namespaces(app_db: Database) -> None:
    """A namespace that embeds a text another namespace embedded must embed it again: a shared
    hit would tell it, by timing, that the other namespace holds that text."""
    from hello_pgmem import KnowledgeBase

    class Counting(HashingEmbedder):
        calls = 0

        def encode_documents(self, texts: Any) -> Any:
            Counting.calls += len(texts)
            return super().encode_documents(texts)

    text = "# Secret\n\nThe merger with Initech closes on Friday."
    KnowledgeBase(app_db, Counting(), "ns_first").add_text(text, document_id="a")
    first = Counting.calls
    KnowledgeBase(app_db, Counting(), "ns_first").add_text(text, document_id="b")
    assert Counting.calls == first, "the same namespace reuses its cache"
    KnowledgeBase(app_db, Counting(), "ns_second").add_text(text, document_id="a")
    assert Counting.calls == 2 * first, "another namespace does not hit the first one's entries"


def test_the_grant_lets_the_read_roles_joins_use_indexes(deployment: Deployment) -> None:
    """graphid equality is marked leakproof by the grant: under the read role's policies a join
    between labels is an index scan, not a scan of a whole label per row."""
    with psycopg.connect(deployment.superuser.database_url) as conn:
        row = conn.execute(
            "SELECT proleakproof FROM pg_proc WHERE oid = 'ag_catalog.graphid_eq'::regproc"
        ).fetchone()
    assert row == (True,)


def bob_names(deployment: Deployment) -> list[str]:
    """The names of Bob's entity vertices, read as a superuser."""
    graph = deployment.superuser.graph_name
    with psycopg.connect(deployment.superuser.database_url) as conn:
        rows = conn.execute(
            sql.SQL(
                "SELECT properties FROM {} WHERE properties OPERATOR(ag_catalog.@>) %s ORDER BY id"
            ).format(sql.Identifier(graph, "Entity")),
            ('{"user_id": "bob"}',),
        ).fetchall()
    return [str(r[0]) for r in rows]


def advisory_locks(deployment: Deployment, key: int) -> int:
    """How many sessions hold the advisory lock ``key``."""
    with psycopg.connect(deployment.superuser.database_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s", (key,)
        ).fetchone()
    return int(row[0]) if row else 0


# A "\r" ends a "//" comment for AGE's scanner: what follows it is Cypher, checked like the rest.
CARRIAGE_RETURN_ATTACKS = [
    "RETURN // x\rstartNode({{id: 1, start_id: {v}, end_id: {v}, label: 'RELATED', properties: {{}}}}::edge)",
    "// x\rWITH {{id: {v}, label: 'Entity', properties: {{}}}}::vertex AS v SET v.name = 'x'",
    "// x\rWITH {{id: {v}, label: 'Entity', properties: {{}}}}::vertex AS v DETACH DELETE v",
    "RETURN // x\r[pg_catalog.pg_sleep(1::pg_float8)]",
    "RETURN // x\rpg_catalog.pg_try_advisory_lock(71044::pg_bigint)",
]


@pytest.mark.parametrize("template", CARRIAGE_RETURN_ATTACKS)
def test_what_follows_a_carriage_return_in_a_comment_is_checked(
    graphs: dict[str, MemoryManager],
    deployment: Deployment,
    template: str,
) -> None:
    query = template.format(v=bob_ids(deployment, "v")[0])
    names, vertices = bob_names(deployment), bob_ids(deployment, "v")
    started = time.monotonic()
    with pytest.raises(InvalidInputError, match="query"):
        graphs["alice"].cypher(query)
    assert time.monotonic() - started < 1, "nothing slept"
    assert (bob_names(deployment), bob_ids(deployment, "v")) == (names, vertices)
    assert advisory_locks(deployment, 71044) == 0


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("RETURN 1 /* never closed", "unterminated /\\* comment"),
        ("RETURN 1 \x0b+ 1", "control character"),
        ("RETURN 1 \x00", "control character"),
        ("MATCH (e:Entity) RETURN e.名字", "is not ASCII"),
        ("RETURN 'unterminated", "unterminated quoted string"),
        ("RETURN '\\x41'", "invalid escape sequence"),
        ("RETURN 1 AS `x", "unterminated quoted identifier"),
        ("RETURN 1 AS a$cypher$b", "may not contain"),
    ],
)
def test_text_the_scanner_cannot_read_as_age_does_is_refused(
    graphs: dict[str, MemoryManager], query: str, reason: str
) -> None:
    with pytest.raises(InvalidInputError, match=reason) as caught:
        graphs["alice"].cypher(query)
    assert caught.value.field == "query"


def test_odd_but_valid_text_runs_as_written(graphs: dict[str, MemoryManager]) -> None:
    """Comments, a CRLF, a percent sign, quoted names and escapes still mean what AGE reads."""
    query = (
        "// the names\r\nMATCH (e:Entity) /* every entity */ WHERE e.name <> 'x\\'s $user_id //' "
        "RETURN e.name AS `the ``name```, 7 % 4 AS `rest` ORDER BY e.name LIMIT 1"
    )
    rows = graphs["alice"].cypher(query, columns=("name", "rest"))
    assert rows and rows[0][1] == 3
    assert graphs["alice"].cypher("RETURN 'a\\u0041\\'%$'") == [("aA'%$",)]


def test_params_with_nul_or_deep_nesting_are_refused(graphs: dict[str, MemoryManager]) -> None:
    with pytest.raises(InvalidInputError, match="params: strings may not contain the NUL"):
        graphs["alice"].cypher("RETURN $x", {"x": "a\x00b"})
    deep: Any = 1
    for _ in range(100):
        deep = [deep]
    with pytest.raises(InvalidInputError, match="params: may nest at most"):
        graphs["alice"].cypher("RETURN $x", {"x": deep})


def test_a_result_holding_another_users_vertex_fails(deployment: Deployment) -> None:
    """Defence in depth: whatever reached AGE, a vertex or an edge of another user in the result
    stops the call."""
    from hello_pgmem.db.age import parse_agtype
    from hello_pgmem.graph.passthrough import check_owner

    graph = deployment.superuser.graph_name
    with psycopg.connect(deployment.superuser.database_url) as conn:
        conn.execute("LOAD 'age'")
        conn.execute("SET search_path = ag_catalog, public")
        vertex, edge = conn.execute(
            sql.SQL(
                "SELECT * FROM cypher({}, $$ MATCH (a:Entity {{user_id: 'bob'}})-[r]->() RETURN a, r LIMIT 1 $$)"
                " AS (a agtype, r agtype)"
            ).format(sql.Literal(graph))
        ).fetchone() or (None, None)
    found = [(parse_agtype(vertex),), ([{"x": parse_agtype(edge)}],)]
    check_owner(found, "bob")
    for row in found:
        with pytest.raises(GraphError, match="of another user"):
            check_owner([row], "alice")


def test_nothing_a_throwaway_transaction_does_outlives_it(
    app_db: Database,
    deployment: Deployment,
) -> None:
    """The passthrough's transaction: rolled back, and its connection closed, so a session lock,
    a session setting or a row it wrote is gone afterwards."""
    with app_db.throwaway_transaction("alice") as conn:
        conn.execute("SELECT pg_advisory_lock(71045), set_config('pgmem.probe', 'left', false)")
        conn.execute(
            "INSERT INTO working_memories (user_id, id, session_id, content, token_count, expires_at)"
            " VALUES ('alice', gen_random_uuid(), 's', 'planted', 1, now() + interval '1 hour')"
        )
    assert advisory_locks(deployment, 71045) == 0
    with app_db.transaction("alice") as conn:
        assert conn.execute("SELECT count(*) FROM working_memories WHERE content = 'planted'").fetchone() == (
            0,
        )
        assert conn.execute("SELECT current_setting('pgmem.probe', true)").fetchone() in ((None,), ("",))


def test_a_passthrough_query_ends_at_its_time_limit(
    deployment: Deployment, graphs: dict[str, MemoryManager]
) -> None:
    from hello_pgmem.core.errors import DatabaseTimeoutError

    quick = deployment.app.model_copy(update={"cypher_timeout_ms": 100})
    with Database(quick) as db:
        manager = MemoryManager(user_id="alice", database=db, embedder=HashingEmbedder())
        with pytest.raises(DatabaseTimeoutError):
            manager.cypher("UNWIND range(1, 4000) AS a UNWIND range(1, 4000) AS b RETURN count(*)")
        assert manager.cypher("RETURN 1") == [(1,)]


def test_erase_takes_the_users_own_namespace_with_its_cached_embeddings(
    app_db: Database,
    deployment: Deployment,
) -> None:
    """A token without --namespace uses user:<user>: erasing the user removes that namespace's
    documents, chunks and cached embeddings, and does not name it among those left."""
    from hello_pgmem import KnowledgeBase
    from hello_pgmem.access import create_token, personal_namespace, resolve_token
    from hello_pgmem.ops.erase import erase_report

    with Database(deployment.owner) as owner_db:
        token, _ = create_token(owner_db, "olga", [])
    identity = resolve_token(app_db, token)
    assert identity is not None and identity.knowledge == (personal_namespace("olga"),)
    own = KnowledgeBase(app_db, HashingEmbedder(), personal_namespace("olga"))
    own.add_text("# Diary\n\nOlga's private plans for the spring.", document_id="diary")
    counts, left = erase_report(app_db, "olga")
    assert (counts["documents"], counts["embedding_cache"]) == (1, 1) and counts["chunks"] >= 1
    assert left == []
    assert own.stats().documents == 0
    with psycopg.connect(deployment.superuser.database_url) as conn:
        schema = deployment.superuser.schema_name
        row = conn.execute(
            sql.SQL("SELECT count(*) FROM {}.chunks WHERE namespace = %s").format(sql.Identifier(schema)),
            (personal_namespace("olga"),),
        ).fetchone()
    assert row == (0,)


def test_a_user_named_like_a_shared_namespace_cannot_reach_it(
    app_db: Database,
    deployment: Deployment,
) -> None:
    from hello_pgmem import KnowledgeBase
    from hello_pgmem.access import create_token, resolve_token
    from hello_pgmem.mcp_server.identity_tools import IdentityTools
    from hello_pgmem.store import Store

    KnowledgeBase(app_db, HashingEmbedder(), "handbook").add_text("# Pay\n\nSalaries are secret.", "pay")
    with Database(deployment.owner) as owner_db:
        token, _ = create_token(owner_db, "handbook", [])
        with pytest.raises(InvalidInputError, match="namespace"):
            create_token(owner_db, "mallory", ["user:handbook"])
    identity = resolve_token(app_db, token)
    assert identity is not None
    with Store(database=app_db, embedder=HashingEmbedder()) as store:
        tools = IdentityTools(store, identity)
        found = tools.rag.run("search", query="salaries")
        listed = tools.rag.run("list_documents")
    assert "secret" not in found and "pay" not in listed


def test_an_import_of_another_users_file_is_refused_unless_asked(
    app_db: Database,
    tmp_path: Any,
) -> None:
    from hello_pgmem.ops.transfer import export_user, import_user

    source = MemoryManager(user_id="ivan", database=app_db, embedder=HashingEmbedder())
    source.add_memory("Ivan keeps bees in the garden", "episodic")
    lines = list(export_user(app_db, "ivan"))
    victim = MemoryManager(user_id="judy", database=app_db, embedder=HashingEmbedder())
    with pytest.raises(InvalidInputError, match="user_id: the file holds user 'ivan', not 'judy'"):
        import_user(app_db, lines, "judy")
    assert victim.get_memory_stats().total_memories == 0
    counts = import_user(app_db, lines, "judy", as_user="judy")
    assert counts["memory"] == 1 and victim.get_memory_stats().total_memories == 1


def test_an_import_registers_no_embedding_model(
    app_db: Database,
    deployment: Deployment,
) -> None:
    """An import naming unknown models would add three HNSW indexes per name: it is refused, and
    no index is made."""
    import json as json_module

    from hello_pgmem.ops.transfer import FORMAT, import_user

    def indexes() -> int:
        with psycopg.connect(deployment.superuser.database_url) as conn:
            row = conn.execute("SELECT count(*) FROM pg_indexes WHERE indexdef LIKE '%hnsw%'").fetchone()
        return int(row[0]) if row else 0

    header = json_module.dumps({"format": FORMAT, "version": 1, "user_id": "kim"})
    records = [
        json_module.dumps(
            {
                "kind": "memory",
                "id": f"00000000-0000-4000-8000-{i:012d}",
                "memory_type": "episodic",
                "content": f"memory {i}",
                "importance": 0.5,
                "created_at": "2026-01-01T00:00:00+00:00",
                "updated_at": "2026-01-01T00:00:00+00:00",
                "embedding": [0.1, 0.2, 0.3],
                "embedding_model": f"planted-model-{i}",
            }
        )
        for i in range(5)
    ]
    before = indexes()
    with pytest.raises(InvalidInputError, match=r"embedding_model: model 'planted-model-0'.*not registered"):
        import_user(app_db, [header, *records], "kim")
    assert indexes() == before


def test_a_zip_bomb_is_refused_before_it_is_unpacked(tmp_path: Any) -> None:
    import io
    import zipfile

    from hello_pgmem.core.errors import InvalidInputError as Refused
    from hello_pgmem.rag.isolated import convert_isolated

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for i in range(3):
            archive.writestr(f"part{i}.txt", b"a" * (110 * 1024 * 1024))
    data = buffer.getvalue()
    assert len(data) < 1_000_000
    started = time.monotonic()
    with pytest.raises(Refused, match="unpack"):
        convert_isolated(data, ".zip", "bomb.zip")
    assert time.monotonic() - started < 2


def test_nul_in_a_session_and_deeply_nested_metadata_are_refused(app_db: Database) -> None:
    with pytest.raises(InvalidInputError, match="session_id"):
        MemoryManager(user_id="nina", database=app_db, embedder=HashingEmbedder(), session_id="s\x00")
    nina = MemoryManager(user_id="nina", database=app_db, embedder=HashingEmbedder())
    deep: dict[str, Any] = {}
    for _ in range(1000):
        deep = {"a": deep}
    with pytest.raises(InvalidInputError, match="metadata: may nest at most"):
        nina.add_memory("a fact", "episodic", metadata=deep)
    assert nina.get_memory_stats().total_memories == 0


BAD_VALUES: dict[str, Callable[[KnowledgeBase, MemoryManager], object]] = {
    "document_ids": lambda kb, memory: kb.search("leave", document_ids=["hand\x00book"]),
    "document_ids ": lambda kb, memory: kb.search("leave", document_ids="handbook"),
    "user_id": lambda kb, memory: MemoryManager(user_id="al\ud800ice", database=memory.db).get_memory_stats(),
    "params": lambda kb, memory: memory.cypher("RETURN $x // $user_id", {"x": "\udc80"}),
    "params ": lambda kb, memory: memory.cypher("RETURN $x // $user_id", {"x": float("nan")}),
    "params  ": lambda kb, memory: memory.cypher("RETURN $x // $user_id", {"x": b"bytes"}),
    "params   ": lambda kb, memory: memory.cypher("RETURN $x // $user_id", {"\ud800": 1}),
    "columns": lambda kb, memory: memory.cypher("RETURN 1 // $user_id", columns=("a b",)),
}


@pytest.mark.parametrize("field", sorted(BAD_VALUES))
def test_a_bad_value_is_refused_naming_its_field_and_changes_nothing(
    graphs: dict[str, MemoryManager], app_db: Database, field: str
) -> None:
    """NUL in a document id, a lone surrogate in a user id or a Cypher parameter, NaN or bytes as
    a parameter, a column name that is no identifier: each an InvalidInputError naming the field,
    not the driver's DataError, UnicodeEncodeError, ValueError or TypeError."""
    kb = KnowledgeBase(app_db, HashingEmbedder(), "team")
    with app_db.connection() as conn:
        before = conn.execute("SELECT count(*) FROM memories").fetchone()
    with pytest.raises(InvalidInputError) as caught:
        BAD_VALUES[field](kb, graphs["alice"])
    assert caught.value.field == field.strip()
    with app_db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == before
