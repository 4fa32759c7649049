"""Property-based tests of every action of the memory and rag tools, with hostile parameters.

For every generated call: the tool returns text (nothing escapes), a failure is a clear message
rather than an internal error (no traceback logged), a failed call leaves the caller's rows as
they were, and the other tenant's rows are never read or changed.

CI runs PGMEM_FUZZ_EXAMPLES (default 150) examples per tool; the long mode is by hand:
``PGMEM_FUZZ_EXAMPLES=10000 pytest tests/test_fuzz.py``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hello_pgmem import Database, HashingEmbedder, MemoryTool, RAGTool
from hello_pgmem.tools.schema import parameters_of
from tests.conftest import ROOMY, wipe

EXAMPLES = int(os.environ.get("PGMEM_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
SECRET = "BOBSECRET"
METACHARACTERS = [
    "'; DROP TABLE memories; --",
    "$$; SELECT pg_sleep(10); $$",
    "}) DETACH DELETE n //",
    "MATCH (n) DETACH DELETE n",
    "%s %(user_id)s {user_id}",
    "' OR '1'='1",
    "$user_id",
    "bob",
    "\\x00",
    "../../../../etc/passwd",
    "victim_ns",
]
hostile_text = st.one_of(
    st.text(max_size=40),
    st.text(st.characters(categories=("Cc", "Cs", "Co", "Zl", "Mn")), max_size=20),
    st.sampled_from(METACHARACTERS),
    st.builds(lambda char, n: char * n, st.sampled_from("a张 \n\x00"), st.integers(5_000, 300_000)),
    st.sampled_from(["", "   ", "\x00", "\ud800", "a\udfffb"]),
)
numbers = st.one_of(
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 2**63, 10**30]),
)
shapes = st.one_of(
    st.none(),
    st.booleans(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


def digest(db: Database, table: str, column: str, value: str) -> str:
    """Every column of every row of ``table`` where ``column = value`` (as a superuser)."""
    with db.connection() as conn:
        row = conn.execute(
            f"SELECT coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') FROM {table} t"
            f" WHERE {column} = %s",
            (value,),
        ).fetchone()
    return str(row[0]) if row else ""


MEMORY_TABLES = ("memories", "working_memories", "entities", "mentions", "relations")


def tenant_state(db: Database, user: str, namespace: str) -> tuple[str, ...]:
    return (
        *(digest(db, table, "user_id", user) for table in MEMORY_TABLES),
        *(digest(db, table, "namespace", namespace) for table in ("documents", "chunks")),
    )


@pytest.fixture(scope="module")
def tenants(database: Database) -> Iterator[dict[str, Any]]:
    """Alice's tools (the fuzzed ones) and Bob's data, with ids Alice might try to reach."""
    wipe(database)
    embedder = HashingEmbedder()
    bob = MemoryTool(user_id="bob", database=database, embedder=embedder, memory_config=ROOMY)
    for kind in ("working", "episodic", "semantic"):
        bob.run({"action": "add", "content": f"{SECRET} 张三在Acme负责Python {kind}", "memory_type": kind})
    bob_rag = RAGTool(rag_namespace="victim_ns", database=database, embedder=embedder, llm=None)
    bob_rag.run({"action": "add_text", "text": f"# Plan\n\n{SECRET} merger plan", "document_id": "plan"})
    with database.connection() as conn:
        bob_ids = [str(r[0]) for r in conn.execute("SELECT id FROM memories WHERE user_id = 'bob'")]
        bob_ids += [str(r[0]) for r in conn.execute("SELECT id FROM working_memories WHERE user_id = 'bob'")]
    alice = MemoryTool(user_id="alice", database=database, embedder=embedder, memory_config=ROOMY)
    alice.run({"action": "add", "content": "张三在Berlin用Python工作", "memory_type": "semantic"})
    alice_rag = RAGTool(
        rag_namespace="fuzz_ns", database=database, embedder=embedder, llm=None, namespaces={"fuzz_ns"}
    )
    yield {"memory": alice, "rag": alice_rag, "bob_ids": bob_ids + [i[:8] for i in bob_ids], "db": database}
    wipe(database)


def arguments(tool: Any, action: str, bob_ids: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Random values, often hostile, for some of the action's parameters, and sometimes an unknown one."""
    method = dict((name, m) for name, m, _ in tool.actions())[action]
    value = st.one_of(hostile_text, numbers, shapes, st.sampled_from(bob_ids))
    names = [p.name for p in parameters_of(method)] + ["unknown_parameter"]
    return st.dictionaries(st.sampled_from(names), value, max_size=len(names))


@pytest.mark.parametrize("kind", ["memory", "rag"])
@FUZZ
@given(data=st.data())
def test_tool_actions_with_hostile_parameters(
    tenants: dict[str, Any], kind: str, data: st.DataObject, caplog: pytest.LogCaptureFixture
) -> None:
    tool, db = tenants[kind], tenants["db"]
    action = data.draw(st.sampled_from([name for name, _, _ in tool.actions()]), label="action")
    params = data.draw(arguments(tool, action, tenants["bob_ids"]), label="params")
    bob_before = tenant_state(db, "bob", "victim_ns")
    alice_before = tenant_state(db, "alice", "fuzz_ns")
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        result = tool.run({"action": action, **params})
    assert isinstance(result, str) and result
    internal = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not internal, f"{action} {params!r:.300} logged an internal error: {internal[0].getMessage()}"
    assert SECRET not in result, "another tenant's content was read"
    assert tenant_state(db, "bob", "victim_ns") == bob_before, "another tenant's rows changed"
    if result.startswith("❌"):
        assert tenant_state(db, "alice", "fuzz_ns") == alice_before, f"a failed {action} changed rows"
