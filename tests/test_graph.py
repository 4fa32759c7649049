"""Semantic memory and its knowledge graph, on a database with AGE and on one without it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from hello_pgmem import Database, DatabaseTimeoutError, GraphError, InvalidInputError, Settings
from hello_pgmem.db.age import cypher
from hello_pgmem.embedding import HashingEmbedder
from hello_pgmem.memory import MemoryManager
from hello_pgmem.ops.rebuild import rebuild_graph
from tests.conftest import Clock, entity_names, row_counts
from tests.deployments import REPO

PEOPLE = [
    ("用户张三是一名Python开发者，专注于机器学习和数据分析", 0.8),
    ("李四是前端工程师，擅长React和Vue.js开发", 0.7),
    ("王五是产品经理，负责用户体验设计和需求分析", 0.6),
]

Factory = Callable[..., MemoryManager]


@pytest.fixture()
def make(any_database: Database, embedder: HashingEmbedder, clock: Clock) -> Iterator[Factory]:
    def build(user_id: str = "alice", **kwargs: Any) -> MemoryManager:
        return MemoryManager(user_id=user_id, database=any_database, embedder=embedder, clock=clock, **kwargs)

    yield build


def vertices(db: Database, label: str, user_id: str, name: str | None = None) -> int:
    if not db.graph_enabled:
        return 0
    query = f"MATCH (n:{label} {{user_id: $user_id}}) WHERE $name IS NULL OR n.name = $name RETURN count(n)"
    with db.connection() as conn:
        return int(cypher(conn, db.settings.graph_name, query, {"user_id": user_id, "name": name})[0][0])


def relational(db: Database, query: str, *args: object) -> list[tuple[Any, ...]]:
    with db.connection() as conn:
        return conn.execute(query, args).fetchall()


def test_reference_demo_semantic(make: Factory, any_database: Database) -> None:
    manager = make()
    for content, importance in PEOPLE:
        manager.add_memory(content, "semantic", importance)
    results = manager.retrieve_memories("前端工程师", memory_types=["semantic"], limit=3, scoring="reference")
    assert results[0].content.startswith("李四")
    assert results[0].score is not None
    top = {**results[0].components, "relevance_score": results[0].score}
    assert top["graph_score"] == 1.0
    assert top["relevance_score"] == pytest.approx(
        (top["vector_score"] * 0.7 + 1.0 * 0.3) * (0.8 + 0.7 * 0.4)
    )
    entities = set(relational(any_database, "SELECT name, entity_type FROM entities WHERE user_id = 'alice'"))
    assert {
        ("张三", "PERSON"),
        ("Python", "TECHNOLOGY"),
        ("Python开发者", "ROLE"),
        ("李四", "PERSON"),
        ("前端工程师", "ROLE"),
        ("React", "TECHNOLOGY"),
        ("Vue.js", "TECHNOLOGY"),
        ("王五", "PERSON"),
        ("产品经理", "ROLE"),
        ("需求分析", "CONCEPT"),
    } <= entities
    relations = set(
        relational(
            any_database,
            """
        SELECT s.name, r.relation_type, t.name FROM relations r
        JOIN entities s ON s.user_id = r.user_id AND s.id = r.source_id
        JOIN entities t ON t.user_id = r.user_id AND t.id = r.target_id WHERE r.user_id = 'alice'""",
        )
    )
    assert {
        ("张三", "职业", "Python开发者"),
        ("张三", "技能", "Python"),
        ("李四", "职业", "前端工程师"),
        ("李四", "擅长", "React"),
        ("王五", "负责", "需求分析"),
    } <= relations
    if any_database.graph_enabled:
        assert vertices(any_database, "Entity", "alice") == len(entities)
        assert vertices(any_database, "Memory", "alice") == 3


def test_graph_only_hit_has_a_graph_score(make: Factory) -> None:
    manager = make()
    manager.add_memory("李四是前端工程师，擅长React和Vue.js开发", "semantic", 0.7)
    trip = manager.add_memory("李四下周要去上海出差", "semantic", 0.5)
    results = {r.id: r for r in manager.retrieve_memories("React", memory_types=["semantic"], limit=5)}
    assert trip in results, "reached through React -> 李四 -> the trip memory"
    assert results[trip].components["graph_score"] == pytest.approx(0.5)
    assert results[trip].components["vector_score"] < 0.2


def test_entities_merge_across_memories(make: Factory, any_database: Database) -> None:
    manager = make()
    first = manager.add_memory("张三是一名Python开发者", "semantic", 0.8)
    second = manager.add_memory("张三喜欢喝咖啡", "semantic", 0.5)
    assert relational(
        any_database, "SELECT count(*) FROM entities WHERE user_id = 'alice' AND name = '张三'"
    ) == [(1,)]
    if any_database.graph_enabled:
        assert vertices(any_database, "Entity", "alice", "张三") == 1
    assert manager.remove_memory(first)
    assert relational(
        any_database, "SELECT count(*) FROM entities WHERE user_id = 'alice' AND name = '张三'"
    ) == [(1,)]
    assert relational(
        any_database, "SELECT count(*) FROM entities WHERE user_id = 'alice' AND name = 'Python'"
    ) == [(0,)]
    if any_database.graph_enabled:
        assert vertices(any_database, "Entity", "alice", "张三") == 1
        assert vertices(any_database, "Entity", "alice", "Python") == 0
        assert vertices(any_database, "Memory", "alice") == 1
    assert manager.remove_memory(second)
    assert relational(any_database, "SELECT count(*) FROM entities WHERE user_id = 'alice'") == [(0,)]
    assert vertices(any_database, "Entity", "alice") == 0


def test_update_re_extracts(make: Factory, any_database: Database) -> None:
    manager = make()
    memory_id = manager.add_memory("张三是一名Python开发者", "semantic", 0.8)
    assert manager.update_memory(memory_id, content="张三是一名前端工程师，擅长React")
    names = {e.name for e in manager.memory_entities(memory_id)}
    assert names == {"张三", "前端工程师", "React"}
    # Python stays in the graph, mentioned only by the memory's earlier versions
    assert relational(
        any_database,
        "SELECT m.version_of IS NOT NULL FROM mentions n"
        " JOIN entities e ON e.user_id = n.user_id AND e.id = n.entity_id"
        " JOIN memories m ON m.user_id = n.user_id AND m.id = n.memory_id"
        " WHERE n.user_id = 'alice' AND e.name = 'Python'",
    ) == [(True,)]
    if any_database.graph_enabled:
        assert vertices(any_database, "Memory", "alice") == 1  # the memory, not its versions
        entities = relational(any_database, "SELECT count(*) FROM entities WHERE user_id = 'alice'")
        assert [(vertices(any_database, "Entity", "alice"),)] == entities  # Python among them


def test_users_never_reach_each_other(make: Factory, any_database: Database) -> None:
    alice, bob = make("alice"), make("bob")
    alice.add_memory("张三是一名Python开发者，在阿里巴巴工作", "semantic", 0.9)
    bob.add_memory("张三是一名医生", "semantic", 0.5)
    hood = bob.graph_neighbourhood("张三")
    assert entity_names(hood) == {"张三", "医生"}
    assert bob.graph_path("张三", "阿里巴巴") == []
    found = bob.retrieve_memories("Python开发者 阿里巴巴", memory_types=["semantic"])
    assert all(item.user_id == "bob" and "医生" in item.content for item in found)
    assert bob.entity_memories("Python") == []
    if any_database.graph_enabled:
        rows = bob.cypher("MATCH (e:Entity {user_id: $user_id}) RETURN e.name", columns=("name",))
        assert sorted(r[0] for r in rows) == ["医生", "张三"]
        assert vertices(any_database, "Entity", "alice") == 4


def test_clear_all_clears_only_the_users_graph(make: Factory, any_database: Database) -> None:
    alice, bob = make("alice"), make("bob")
    alice.add_memory("张三是一名Python开发者", "semantic", 0.9)
    bob.add_memory("李四是前端工程师", "semantic", 0.9)
    alice.clear_all()
    assert relational(any_database, "SELECT DISTINCT user_id FROM entities") == [("bob",)]
    if any_database.graph_enabled:
        assert vertices(any_database, "Entity", "alice") == 0
        assert vertices(any_database, "Entity", "bob") == 2


def test_graph_queries(make: Factory) -> None:
    manager = make()
    manager.add_memory("张三在阿里巴巴工作", "semantic", 0.5)
    manager.add_memory("李四也在阿里巴巴工作", "semantic", 0.5)
    manager.add_memory("李四是前端工程师，擅长React", "semantic", 0.5)
    steps = manager.graph_path("张三", "React")
    assert [(s.source, s.relation_type, s.target) for s in steps] == [
        ("张三", "工作于", "阿里巴巴"),
        ("李四", "工作于", "阿里巴巴"),
        ("李四", "擅长", "React"),
    ]
    one = manager.graph_neighbourhood("李四", depth=1)
    assert entity_names(one) == {"李四", "阿里巴巴", "前端工程师", "React"}
    two = manager.graph_neighbourhood("李四", depth=2)
    assert "张三" in entity_names(two)
    about = sorted(m.content for m in manager.entity_memories("阿里巴巴"))
    assert about == ["张三在阿里巴巴工作", "李四也在阿里巴巴工作"]
    with pytest.raises(InvalidInputError, match="depth"):
        manager.graph_neighbourhood("李四", depth=9)


def test_consolidation_into_semantic_builds_the_graph(make: Factory, any_database: Database) -> None:
    manager = make()
    manager.add_memory("李四是前端工程师，擅长React", "episodic", 0.9)
    assert manager.consolidate_memories("episodic", "semantic", 0.8) == 1
    assert relational(any_database, "SELECT count(*) FROM mentions WHERE user_id = 'alice'") == [(3,)]
    if any_database.graph_enabled:
        assert vertices(any_database, "Memory", "alice") == 1


def test_a_failure_while_writing_the_graph_leaves_nothing(
    any_database: Database, embedder: HashingEmbedder
) -> None:
    # Another session holds the table the write's last step needs (the RELATED edges with AGE,
    # the relations table without): the write times out on the lock and must leave nothing.
    table = (
        f'{any_database.settings.graph_name}."RELATED"' if any_database.graph_enabled else "pgmem.relations"
    )
    impatient = Settings(**{**any_database.settings.model_dump(), "lock_timeout_ms": 300})
    with Database(impatient) as db, psycopg.connect(any_database.settings.database_url) as blocker:
        manager = MemoryManager(user_id="alice", database=db, embedder=embedder)
        before = row_counts(any_database)
        blocker.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(DatabaseTimeoutError, match="PGMEM_LOCK_TIMEOUT_MS=300"):
            manager.add_memory("张三是一名Python开发者", "semantic", 0.8)
        blocker.rollback()
        assert row_counts(any_database) == before
        assert vertices(any_database, "Entity", "alice") == 0
        assert vertices(any_database, "Memory", "alice") == 0
        manager.add_memory("张三是一名Python开发者", "semantic", 0.8)  # and works once the lock is gone
        assert row_counts(any_database)["relations"] == before["relations"] + 2


HOSTILE = ["}) DETACH DELETE n //", "$$; DROP TABLE memories; --", "x' OR '1'='1", "$user_id"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_entity_names_are_stored_verbatim(make: Factory, any_database: Database, name: str) -> None:
    manager = make()
    manager.add_memory(f"Alice Smith likes {name} and Docker", "semantic", 0.5)
    manager.add_memory("Bob Jones is a Rust developer", "semantic", 0.5)
    assert relational(any_database, "SELECT count(*) FROM memories") == [(2,)]
    if any_database.graph_enabled:
        assert vertices(any_database, "Memory", "alice") == 2


def test_cypher_needs_age_and_sees_only_the_user(make: Factory, any_database: Database) -> None:
    manager = make()
    manager.add_memory("张三是一名Python开发者", "semantic", 0.8)
    make("bob").add_memory("李四是一名医生", "semantic", 0.8)
    if not any_database.graph_enabled:
        with pytest.raises(GraphError, match="Apache AGE is not installed"):
            manager.cypher("MATCH (e:Entity {user_id: $user_id}) RETURN e")
        return
    unfiltered = manager.cypher("MATCH (e:Entity) RETURN e.user_id, e.name", columns=("u", "n"))
    assert {u for u, _ in unfiltered} == {"alice"} and "张三" in {n for _, n in unfiltered}
    rows = manager.cypher(
        "MATCH (m:Memory {user_id: $user_id})-[:MENTIONS]->(e:Entity {name: $name}) RETURN m.id",
        {"name": "张三"},
        columns=("memory_id",),
    )
    assert len(rows) == 1


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (e:Entity {user_id: $user_id}) DETACH DELETE e",
        "MATCH (e:Entity {user_id: $user_id}) SET e.user_id = 'bob' RETURN e",
        "MATCH (e:Entity {user_id: $user_id}) REMOVE e.name RETURN e",
        "MERGE (e:Entity {user_id: $user_id, id: 'x'}) RETURN e",
        "match (e:Entity {user_id: $user_id}) create (e)-[:RELATED]->(e) return e",
    ],
)
@pytest.mark.needs_age
def test_cypher_passthrough_only_reads(make_manager: Factory, database: Database, query: str) -> None:
    manager = make_manager()
    manager.add_memory("张三是一名Python开发者", "semantic", 0.8)
    before = vertices(database, "Entity", "alice")
    with pytest.raises(InvalidInputError, match="must only read the graph"):
        manager.cypher(query)
    assert vertices(database, "Entity", "alice") == before
    quoted = "MATCH (e:Entity {user_id: $user_id, name: 'DELETE me'}) RETURN e // SET in a comment"
    assert manager.cypher(quoted) == [], "keywords inside strings and comments are not clauses"


@pytest.mark.needs_age
def test_age_property_indexes_are_used(database: Database) -> None:
    graph = database.settings.graph_name
    with database.connection() as conn:
        conn.execute("SET LOCAL enable_seqscan = off")
        for pattern in ("(e:Entity {user_id: 'u', name: 'x'})", "(m:Memory {user_id: 'u', id: 'i'})"):
            plan = "\n".join(
                r[0]
                for r in conn.execute(
                    f"EXPLAIN SELECT * FROM ag_catalog.cypher('{graph}', $$ MATCH {pattern} RETURN 1 $$)"
                    " AS (v ag_catalog.agtype)"
                ).fetchall()
            )
            assert "_properties" in plan and "Index" in plan, plan
        conn.rollback()


@pytest.mark.needs_age
def test_rebuild_reprojects_from_the_tables(make: Factory, database: Database) -> None:
    if not database.graph_enabled:
        pytest.fail("the session database has AGE")
    manager = MemoryManager(user_id="alice", database=database, embedder=HashingEmbedder())
    for content, importance in PEOPLE:
        manager.add_memory(content, "semantic", importance)
    before = (vertices(database, "Entity", "alice"), vertices(database, "Memory", "alice"))
    with database.connection() as conn:
        cypher(conn, database.settings.graph_name, "MATCH (n) DETACH DELETE n")
    counts = rebuild_graph(database)
    assert (counts["entities"], counts["memories"]) == before
    assert (vertices(database, "Entity", "alice"), vertices(database, "Memory", "alice")) == before
    with database.connection() as conn:
        edges = cypher(
            conn,
            database.settings.graph_name,
            "MATCH (:Entity {user_id: $u})-[r:RELATED]->() RETURN count(r)",
            {"u": "alice"},
        )
    assert edges[0][0] == counts["relations"] > 0
    manager.clear_all()


def test_names_merge_across_width_case_and_spaces(make: Factory, any_database: Database) -> None:
    manager = make()
    manager.add_memory("Alice Smith likes Python", "semantic", 0.5)
    manager.add_memory("Bob Jones likes PYTHON", "semantic", 0.5)
    manager.add_memory("张三喜欢Ｐｙｔｈｏｎ", "semantic", 0.5)
    rows = relational(
        any_database, "SELECT name_norm, count(*) FROM entities WHERE name_norm = 'python' GROUP BY 1"
    )
    assert rows == [("python", 1)]
    assert relational(
        any_database,
        "SELECT count(*) FROM mentions m JOIN entities e ON e.user_id = m.user_id AND e.id = m.entity_id"
        " WHERE e.name_norm = 'python'",
    ) == [(3,)]


def test_llm_extraction_and_its_fallback(make: Factory, any_database: Database) -> None:
    import json

    from hello_pgmem.graph.extraction import LLMExtractor
    from hello_pgmem.llm import ChatClient
    from tests.fake_openai import FakeOpenAI, serve

    answers = iter(
        [
            json.dumps(
                {
                    "entities": [{"name": "赵六", "type": "person"}, {"name": "量子计算", "type": "CONCEPT"}],
                    "relations": [{"source": "赵六", "type": "研究", "target": "量子计算"}],
                }
            ),
            "I think the entities are 赵六 and 上海.",  # not JSON: rejected, the rules run instead
            json.dumps({"entities": [{"name": "", "type": "PERSON"}]}),  # invalid: rejected too
        ]
    )
    with serve(FakeOpenAI(chat=lambda body: next(answers))) as fake:
        extractor = LLMExtractor(ChatClient("fake-model", base_url=fake.base_url, api_key="k", max_retries=0))
        manager = make(extractor=extractor)
        first = manager.add_memory("赵六的研究方向是量子计算", "semantic", 0.7)
        second = manager.add_memory("李四是前端工程师", "semantic", 0.7)
        third = manager.add_memory("王五是产品经理", "semantic", 0.7)
        request = fake.requests[0]["body"]
        assert request["response_format"] == {"type": "json_object"}
        assert request["messages"][1]["content"] == "赵六的研究方向是量子计算"
    assert {(e.name, e.entity_type) for e in manager.memory_entities(first)} == {
        ("赵六", "PERSON"),
        ("量子计算", "CONCEPT"),
    }
    assert {e.name for e in manager.memory_entities(second)} == {"李四", "前端工程师"}
    assert {e.name for e in manager.memory_entities(third)} == {"王五", "产品经理"}
    steps = manager.graph_path("赵六", "量子计算")
    assert [(s.source, s.relation_type, s.target) for s in steps] == [("赵六", "研究", "量子计算")]


def test_chat_words_never_become_entities(make: Factory, any_database: Database) -> None:
    manager = make()
    for text in (
        "Wow, thanks Caroline! What a great idea. You should try it.",
        "Hey Mel! Good to see you! How have you been?",
        "哇，谢谢你！你什么时候去北京？哈哈",
    ):
        manager.add_memory(text, "semantic")
    names = {row[0] for row in relational(any_database, "SELECT name FROM entities WHERE user_id = 'alice'")}
    assert names == {"Caroline", "Mel", "北京"}
    explicit = manager._parts.extractor.extract(
        "Thanks Anna!"
    )  # every extractor's output passes the same filter
    assert [e.name for e in explicit.entities] == ["Anna"]


def test_graph_expansion_can_be_turned_off(make: Factory) -> None:
    from hello_pgmem.core.models import MemoryConfig

    manager = make()
    for content, importance in PEOPLE:
        manager.add_memory(content, "semantic", importance)
    with_graph = manager.retrieve_memories("李四", memory_types=["semantic"])
    without = make(config=MemoryConfig(graph_search=False)).retrieve_memories(
        "李四", memory_types=["semantic"]
    )
    assert with_graph[0].components["graph_score"] > 0
    assert all(m.components["graph_score"] == 0 for m in without)


def test_path_search_is_a_breadth_first_search_not_an_enumeration_of_paths(
    make: Factory, any_database: Database
) -> None:
    """A dense graph of 40 entities, every pair related: 40^5 simple paths of length 6 (an
    enumeration of paths ran into the statement timeout), one visit per entity for a BFS."""
    manager = make()
    memory = manager.add_memory("一条记忆", "semantic", 0.5)
    names = [f"节点{i}" for i in range(40)] + ["孤岛"]
    with any_database.transaction("alice") as conn:
        conn.execute(
            "INSERT INTO entities (user_id, id, name, name_norm) "
            "SELECT 'alice', gen_random_uuid(), n, lower(n) FROM unnest(%s::text[]) AS n",
            (names,),
        )
        conn.execute(
            "INSERT INTO relations (user_id, source_id, relation_type, target_id, memory_id) "
            "SELECT 'alice', a.id, '认识', b.id, %s FROM entities a, entities b "
            "WHERE a.user_id = 'alice' AND b.user_id = 'alice' AND a.id <> b.id "
            "AND a.name LIKE '节点%%' AND b.name LIKE '节点%%'",
            (memory,),
        )
    steps = manager.graph_path("节点0", "节点39", max_depth=6)
    assert [(s.source, s.target) for s in steps] in ([("节点0", "节点39")], [("节点39", "节点0")])
    assert manager.graph_path("节点0", "孤岛", max_depth=6) == []


@pytest.mark.parametrize(
    ("text", "entities", "relations"),
    [
        (
            "Alice lives in Paris and works at Google.",
            {("Alice", "PERSON"), ("Paris", "LOCATION"), ("Google", "ORG")},
            {("Alice", "lives_in", "Paris"), ("Alice", "works_at", "Google")},
        ),
        (
            "Alice works at Acme in Berlin. Bob is her manager.",
            {("Alice", "PERSON"), ("Acme", "ORG"), ("Berlin", "MISC"), ("Bob", "PERSON")},
            {("Alice", "works_at", "Acme")},
        ),
        (
            "Alice's manager is Carol, who leads the analytics team",
            {("Alice", "PERSON"), ("Carol", "PERSON")},
            {("Alice", "manager", "Carol")},
        ),
        (
            "Bob moved to Berlin in 2021 and married Dana.",
            {("Bob", "PERSON"), ("Berlin", "LOCATION"), ("Dana", "PERSON")},
            {("Bob", "lives_in", "Berlin"), ("Bob", "married_to", "Dana")},
        ),
    ],
)
def test_english_offline_extraction_is_what_docs_say(
    text: str, entities: set[tuple[str, str]], relations: set[tuple[str, str, str]]
) -> None:
    """docs/extraction.md, 'English text offline, by example': without a chat model or spaCy model."""
    from hello_pgmem.graph.extraction import create_extractor

    found = create_extractor(None).extract(text)
    assert {(e.name, e.type) for e in found.entities} == entities
    assert {(r.source, r.type, r.target) for r in found.relations} == relations
    assert text in (REPO / "docs" / "extraction.md").read_text()
