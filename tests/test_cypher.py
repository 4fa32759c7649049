"""Cypher through AGE: values are bound server-side and can never change the query."""

from __future__ import annotations

import math
from decimal import Decimal

import psycopg
import pytest

from hello_pgmem.db.age import Edge, Path, Vertex, cypher, parse_agtype

Conn = psycopg.Connection[tuple[object, ...]]
GRAPH = "pgmem_graph"
HOSTILE = [
    "x'}) DETACH DELETE n //",
    "$$; DROP TABLE memories; --",
    "$cypher$ MATCH (n) DETACH DELETE n $cypher$",
    "}) RETURN 1 UNION MATCH (m) DETACH DELETE m //",
    "\\' OR 1=1 --",
    '张三"}]->(x)',
]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_string_is_stored_verbatim_and_executes_nothing(conn: Conn, name: str) -> None:
    before = cypher(conn, GRAPH, "MATCH (n) RETURN count(n)")[0][0]
    created = cypher(
        conn,
        GRAPH,
        "CREATE (e:Entity {name: $name, user_id: $user}) RETURN e.name",
        {"name": name, "user": "alice"},
    )
    assert created == [(name,)]
    found = cypher(
        conn,
        GRAPH,
        "MATCH (e:Entity {user_id: $user}) WHERE e.name = $name RETURN e.name",
        {"name": name, "user": "alice"},
    )
    assert found == [(name,)]
    assert cypher(conn, GRAPH, "MATCH (n) RETURN count(n)")[0][0] == before + 1
    assert conn.execute("SELECT to_regclass('memories') IS NOT NULL").fetchone() == (True,)


def test_several_columns_and_maps(conn: Conn) -> None:
    cypher(
        conn,
        GRAPH,
        "CREATE (:Entity {name: $a, user_id: 'u'})-[:RELATED {type: $t}]->(:Entity {name: $b, user_id: 'u'})",
        {"a": "张三", "b": "Python", "t": "技能"},
    )
    rows = cypher(
        conn,
        GRAPH,
        "MATCH (a:Entity)-[r:RELATED]->(b:Entity) WHERE a.name = $a RETURN a.name, r.type, b",
        {"a": "张三"},
        columns=("source", "relation", "target"),
    )
    assert len(rows) == 1
    source, relation, target = rows[0]
    assert (source, relation) == ("张三", "技能")
    assert target["properties"] == {"name": "Python", "user_id": "u"}


@pytest.mark.parametrize(
    ("graph", "columns", "query"),
    [
        ("pgmem_graph'; DROP TABLE x; --", ("v",), "RETURN 1"),
        (GRAPH, ("v int); DROP TABLE x; --",), "RETURN 1"),
        (GRAPH, ("v",), "RETURN 1 $cypher$; DROP TABLE x; --"),
        (GRAPH, (), "RETURN 1"),
    ],
)
def test_names_that_cannot_be_parameters_are_validated(
    conn: Conn, graph: str, columns: tuple[str, ...], query: str
) -> None:
    with pytest.raises(ValueError):
        cypher(conn, graph, query, columns=columns)


def test_annotations_are_read_only_outside_strings(conn: Conn) -> None:
    """A name that looks like an annotation comes back unchanged; vertices, edges and paths typed."""
    tricky = 'a::vertex b ::edge "c"::path'
    cypher(
        conn,
        GRAPH,
        "CREATE (:Entity {name: $a, user_id: 'u'})-[:RELATED {type: $t}]->(:Entity {name: 'z', user_id: 'u'})",
        {"a": tricky, "t": "x::numeric"},
    )
    [(path,)] = cypher(conn, GRAPH, "MATCH p = (a:Entity {name: $a})-[]->() RETURN p", {"a": tricky})
    assert isinstance(path, Path) and [type(x) for x in path] == [Vertex, Edge, Vertex]
    assert path[0].properties["name"] == tricky and path[0].label == "Entity"
    assert path[1].properties["type"] == "x::numeric" and path[1]["start_id"] == path[0]["id"]
    [(number, nan, infinite)] = cypher(
        conn,
        GRAPH,
        "RETURN '3.14159265358979323846'::numeric, 'NaN'::float, '-Infinity'::float",
        columns=("n", "x", "y"),
    )
    assert number == Decimal("3.14159265358979323846")
    assert math.isnan(nan) and infinite == -math.inf


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"name": "a::vertex"}', {"name": "a::vertex"}),
        ('[1::numeric, "2::numeric", [3]]', [Decimal(1), "2::numeric", [3]]),
        ('{"id": 1, "label": "E", "properties": {}}::vertex', {"id": 1, "label": "E", "properties": {}}),
        ('"\\"quoted\\"::vertex"', '"quoted"::vertex'),
    ],
)
def test_parse_agtype(text: str, expected: object) -> None:
    assert parse_agtype(text) == expected
