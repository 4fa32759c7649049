"""LangGraph's ``BaseStore`` contract, as LangGraph's own store tests check it, against PgMemStore:
batch order and results, put/get/delete, namespaces and their prefixes, filters and their
operators (LangGraph's in-memory store is the oracle), limit and offset, search with and without a
query, concurrency and the async forms. Where PgMemStore differs on purpose the test says why."""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from hello_pgmem import Database, InvalidInputError
from hello_pgmem.integrations.langgraph import PgMemStore, item_id
from hello_pgmem.memory import MemoryManager
from tests.conftest import row_counts
from tests.test_temporal import server_now


@pytest.fixture()
def store(make_manager: Callable[..., MemoryManager]) -> PgMemStore:
    return PgMemStore(make_manager("contract_user"))


# ---------------------------------------------------------------------------- batch


def stored_items(db: Database) -> int:
    """The items the store holds (each key's current value; earlier values are versions)."""
    with db.transaction(all_rows=True) as conn:
        row = conn.execute("SELECT count(*) FROM memories WHERE version_of IS NULL").fetchone()
    assert row is not None
    return int(row[0])


def test_batch_order_and_results(store: PgMemStore) -> None:
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(namespace=("test", "foo"), key="key1"),
            PutOp(namespace=("test", "bar"), key="key2", value={"data": "value2"}),
            SearchOp(namespace_prefix=("test",), filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            GetOp(namespace=("test",), key="key3"),
        ]
    )
    assert len(results) == 5
    assert isinstance(results[0], Item) and results[0].value == {"data": "value1"}
    assert results[1] is None
    assert isinstance(results[2], list) and [i.key for i in results[2] if isinstance(i, Item)] == ["key1"]
    assert results[3] == [("test", "bar"), ("test", "foo")]
    assert results[4] is None
    again = store.batch(
        [
            SearchOp(namespace_prefix=("test",), filter=None, limit=5, offset=0),
            PutOp(namespace=("test",), key="key3", value={"data": "value3"}),
            GetOp(namespace=("test",), key="key3"),
            PutOp(namespace=("test",), key="key3", value=None),
            GetOp(namespace=("test",), key="key3"),
        ]
    )
    assert isinstance(again[0], list) and {i.key for i in again[0] if isinstance(i, Item)} == {"key1", "key2"}
    assert again[1] is None and isinstance(again[2], Item) and again[2].value == {"data": "value3"}
    assert again[3] is None and again[4] is None, "each operation sees the ones before it"


def test_batch_puts_of_one_key_keep_the_last(store: PgMemStore, clean: Database) -> None:
    store.batch([PutOp(("ns",), "k", {"n": i}) for i in range(5)])
    item = store.get(("ns",), "k")
    assert item is not None and item.value == {"n": 4}
    assert stored_items(clean) == 1


def test_async_batch_and_methods(store: PgMemStore) -> None:
    async def scenario() -> None:
        await store.aput(("docs",), "one", {"text": "PostgreSQL row-level security"})
        await store.aput(("docs",), "two", {"text": "pgvector HNSW indexes"}, index=["text"])
        results = await store.abatch([GetOp(("docs",), "one"), GetOp(("docs",), "missing")])
        assert isinstance(results[0], Item) and results[0].key == "one" and results[1] is None
        assert (await store.asearch(("docs",), query="vector index"))[0].key == "two"
        assert await store.alist_namespaces() == [("docs",)]
        await store.adelete(("docs",), "two")
        assert await store.aget(("docs",), "two") is None

    asyncio.run(scenario())


# ---------------------------------------------------------------------------- items


def test_put_get_update_delete(store: PgMemStore, clean: Database) -> None:
    store.put(("a", "b"), "k", {"x": 1, "nested": {"y": [1, 2]}})
    first = store.get(("a", "b"), "k")
    assert first is not None and first.value == {"x": 1, "nested": {"y": [1, 2]}}
    assert (first.namespace, first.key) == (("a", "b"), "k")
    store.put(("a", "b"), "k", {"x": 2})
    second = store.get(("a", "b"), "k")
    assert second is not None and second.value == {"x": 2}, "a put replaces the whole value"
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    assert store.get(("a",), "k") is None and store.get(("a", "b", "c"), "k") is None
    store.delete(("a", "b"), "k")
    assert store.get(("a", "b"), "k") is None and stored_items(clean) == 0
    store.delete(("a", "b"), "k")  # deleting what is not there is no error


def test_non_ascii_and_long_values(store: PgMemStore) -> None:
    store.put(("用户", "東京"), "キー", {"text": "こんにちは 🌸", "emoji": "✨"})
    item = store.get(("用户", "東京"), "キー")
    assert item is not None and item.value == {"text": "こんにちは 🌸", "emoji": "✨"}
    assert store.search(("用户",), filter={"emoji": "✨"})[0].key == "キー"
    long_text = "word " * 20_000  # 100,000 characters: more than a memory's content
    store.put(("docs",), "long", {"text": long_text})
    long_item = store.get(("docs",), "long")
    assert long_item is not None and long_item.value["text"] == long_text, "the value is kept whole"


def test_values_that_are_not_json_are_refused(store: PgMemStore, clean: Database) -> None:
    with pytest.raises(InvalidInputError, match="value: must be JSON-serialisable without NaN"):
        store.put(("ns",), "k", {"x": float("nan")})
    with pytest.raises(InvalidInputError, match="value: must not contain NUL"):
        store.put(("ns",), "k", {"x": "a\x00b"})
    assert row_counts(clean)["memories"] == 0


@pytest.mark.parametrize("namespace", [("",), ("a", ""), ("a.b",), ("nul\x00",)])
def test_bad_labels_are_refused(store: PgMemStore, namespace: tuple[str, ...], clean: Database) -> None:
    """A label that could not be told from its neighbours in the stored path is refused by put
    and by batch alike (LangGraph's validate_op_namespace)."""
    with pytest.raises(InvalidNamespaceError):
        store.put(namespace, "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(namespace, "k", {"v": 1})])
    assert row_counts(clean)["memories"] == 0


@pytest.mark.parametrize("namespace", [(), ("langgraph", "x")])
def test_put_refuses_what_batch_takes(store: PgMemStore, namespace: tuple[str, ...]) -> None:
    """As in LangGraph's stores: put refuses the empty namespace and the root ``langgraph``
    (reserved for LangGraph's own items), which a PutOp given to batch may use."""
    with pytest.raises(InvalidNamespaceError):
        store.put(namespace, "k", {"v": 1})
    assert store.batch([PutOp(namespace, "k", {"v": 1}), GetOp(namespace, "k")])[1] is not None
    assert [i.key for i in store.search(namespace)] == ["k"]


def test_a_label_with_a_period_cannot_reach_another_namespace(store: PgMemStore) -> None:
    store.put(("foo", "bar"), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([SearchOp(("foo.bar",))])
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("foo.bar",), "k")])


# ---------------------------------------------------------------------------- namespaces


def test_list_namespaces_prefix_suffix_wildcards_depth_pages(store: PgMemStore) -> None:
    for namespace in (("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "x"), ("z",)):
        store.put(namespace, "k", {"t": 1})
    assert store.list_namespaces() == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "x"),
        ("z",),
    ]
    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
    ]
    assert store.list_namespaces(suffix=("i",)) == [("a", "b", "d", "i")]
    assert store.list_namespaces(prefix=("a", "*", "d")) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    assert store.list_namespaces(prefix=("a",), suffix=("e",)) == [("a", "b", "d", "e")]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "x"), ("z",)]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    assert store.batch([ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("z",)),))]) == [[("z",)]]
    assert store.list_namespaces(prefix=("nothing",)) == []


def test_a_prefix_ends_at_a_label_boundary(store: PgMemStore) -> None:
    store.put(("test", "a"), "k1", {"v": 1})
    store.put(("test", "ab"), "k2", {"v": 2})
    store.put(("te%t", "_"), "k3", {"v": 3})
    assert [i.key for i in store.search(("test", "a"))] == ["k1"]
    assert [i.key for i in store.search(("te%t",))] == ["k3"], "LIKE's metacharacters are plain text"
    assert {i.key for i in store.search(())} == {"k1", "k2", "k3"}, "an empty prefix is every item"
    assert store.list_namespaces(prefix=("test", "a")) == [("test", "a")]


def test_labels_with_trailing_newlines(store: PgMemStore) -> None:
    store.put(("ns\n",), "k", {"v": 1})
    store.put(("ns",), "k", {"v": 2})
    first, second = store.get(("ns\n",), "k"), store.get(("ns",), "k")
    assert first is not None and first.value == {"v": 1} and second is not None and second.value == {"v": 2}


# ---------------------------------------------------------------------------- search


def test_search_without_query_filters_pages_and_newest_first(store: PgMemStore, clock: Any) -> None:
    for n in range(6):
        clock.advance(seconds=1)
        store.put(("docs",), f"d{n}", {"n": n, "even": n % 2 == 0, "tags": ["x"] if n < 3 else ["x", "y"]})
    assert [i.key for i in store.search(("docs",))] == ["d5", "d4", "d3", "d2", "d1", "d0"]
    assert [i.key for i in store.search(("docs",), limit=2, offset=1)] == ["d4", "d3"]
    assert [i.key for i in store.search(("docs",), filter={"even": True})] == ["d4", "d2", "d0"]
    assert [i.key for i in store.search(("docs",), filter={"tags": ["x"]})] == ["d2", "d1", "d0"]
    assert [i.key for i in store.search(("docs",), filter={"n": {"$gte": 2, "$lt": 4}})] == ["d3", "d2"]
    assert [i.key for i in store.search(("docs",), filter={"n": {"$ne": 5}}, limit=2)] == ["d4", "d3"]
    assert store.search(("docs",), limit=0) == []
    assert all(i.score is None for i in store.search(("docs",)))


def test_unknown_operators_and_bad_filters_are_refused(store: PgMemStore) -> None:
    store.put(("docs",), "d", {"n": 1})
    with pytest.raises(ValueError, match=r"unknown operator '\$in'"):
        store.search(("docs",), filter={"n": {"$in": [1, 2]}})
    with pytest.raises(ValueError, match=r"\$gt compares with a number or a string"):
        store.search(("docs",), filter={"n": {"$gt": [1]}})
    with pytest.raises(ValueError, match="limit and offset"):
        store.search(("docs",), offset=-1)


def test_query_search_ranks_within_the_namespace_and_filter(
    store: PgMemStore, make_manager: Callable[..., MemoryManager]
) -> None:
    """Many matching items elsewhere, and many memories of the user, never crowd out the few
    in the namespace searched: both are applied inside the candidate search."""
    memory = store.memory
    store.batch(
        [PutOp(("other",), f"o{i}", {"text": f"hiking trip number {i} in the mountains"}) for i in range(300)]
    )
    memory.add_memories([f"notes on hiking boots {i}" for i in range(300)], "episodic", 0.5)
    store.batch(
        [
            PutOp(("mine",), f"m{i}", {"text": f"hiking in the Alps, day {i}", "kind": "rare"})
            for i in range(5)
        ]
        + [PutOp(("mine",), f"c{i}", {"text": f"hiking gear list {i}", "kind": "common"}) for i in range(3)]
    )
    found = store.search(("mine",), query="hiking", limit=10)
    assert {i.key for i in found} == {"m0", "m1", "m2", "m3", "m4", "c0", "c1", "c2"}
    rare = store.search(("mine",), query="hiking", filter={"kind": "rare"}, limit=10)
    assert {i.key for i in rare} == {"m0", "m1", "m2", "m3", "m4"}
    assert [i.key for i in store.search(("mine",), query="Alps day 3", limit=1)] == ["m3"]
    scores = [i.score or 0.0 for i in found]
    assert all(s > 0 for s in scores) and scores == sorted(scores, reverse=True)
    page = store.search(("mine",), query="hiking", limit=3, offset=3)
    assert [i.key for i in page] == [i.key for i in found[3:6]]


def test_a_search_as_of_a_time_ranks_within_the_namespace_too(store: PgMemStore, clean: Database) -> None:
    """1,100 items elsewhere that match better never crowd the namespace's 3 out of a search as
    the store knew it at a time: the namespace is applied inside the as-of ranking."""
    store.batch(
        [PutOp(("other",), f"o{i}", {"text": f"hiking hiking hiking trip {i}"}) for i in range(1_100)]
    )
    store.batch([PutOp(("mine",), f"m{i}", {"text": f"a long walk, some hiking, day {i}"}) for i in range(3)])
    then = PgMemStore(store.memory, known_at=server_now(clean))
    live = store.search(("mine",), query="hiking", limit=5)
    past = then.search(("mine",), query="hiking", limit=5)
    assert sorted(i.key for i in past) == sorted(i.key for i in live) == ["m0", "m1", "m2"]


def test_items_put_with_index_false_are_not_in_query_searches(store: PgMemStore) -> None:
    store.put(("docs",), "indexed", {"text": "quarterly report on solar panels"})
    store.put(("docs",), "hidden", {"text": "quarterly report on solar panels"}, index=False)
    assert [i.key for i in store.search(("docs",), query="solar panels report")] == ["indexed"]
    assert {i.key for i in store.search(("docs",))} == {"indexed", "hidden"}, "a listing has both"
    store.put(("docs",), "hidden", {"text": "quarterly report on solar panels"})  # indexed again
    assert {i.key for i in store.search(("docs",), query="solar panels report")} == {"indexed", "hidden"}


def test_index_fields_and_index_config(make_manager: Callable[..., MemoryManager]) -> None:
    store = PgMemStore(make_manager("index_user"), index={"fields": ["title"]})
    store.put(("docs",), "a", {"title": "volcanic eruptions", "body": "gardening tips"})
    store.put(("docs",), "b", {"title": "gardening tips", "body": "volcanic eruptions"})
    assert store.search(("docs",), query="volcanic eruptions", limit=1)[0].key == "a"
    store.put(("docs",), "c", {"title": "x", "body": "submarine cables"}, index=["body"])
    assert store.search(("docs",), query="submarine cables", limit=1)[0].key == "c"
    with pytest.raises(ValueError, match="index: dims, embed cannot be set here"):
        PgMemStore(make_manager("index_user"), index={"dims": 3, "embed": "openai:x", "fields": ["t"]})
    with pytest.raises(ValueError, match="fields must be a list"):
        PgMemStore(make_manager("index_user"), index="title")


# ---------------------------------------------------------------------------- filters, against LangGraph's


# No 0 or 1 among the numbers: Python's True == 1 would match a boolean with a number, and
# JSON's true is no number.
ITEMS: list[dict[str, Any]] = [
    {"n": 2, "s": "a", "b": True, "l": [2, 3], "d": {"x": 2, "y": "z"}},
    {"n": 2.5, "s": "b", "b": False, "l": [2], "d": {"x": 3}},
    {"n": -3, "s": "ab", "l": [], "d": {}},
    {"s": None, "b": True, "l": [[2], {"x": 2}], "d": {"x": 2, "nested": {"deep": [True]}}},
    {"n": "2", "s": 7, "l": "not a list", "d": [2]},
    {"n": 7, "b": None, "d": {"x": None}},
    {},
]
FIELDS = ["n", "s", "b", "l", "d", "missing"]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([2, 3, 7, -3, 2.5, -3.0, math.nan, math.inf, -math.inf]),
    st.sampled_from(["a", "b", "ab", "2", "z", "a\x00"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=2),
        st.dictionaries(st.sampled_from(["x", "y", "nested", "deep"]), inner, max_size=2),
    ),
    max_leaves=4,
)
operands = st.one_of(
    st.sampled_from([2, 3, 7, -3, 2.5, -3.0, math.nan, math.inf, -math.inf]),
    st.sampled_from(["a", "ab", "b"]),
)
operator_conditions = st.dictionaries(
    st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), operands, min_size=1, max_size=2
)
existing = st.sampled_from([(k, v) for item in ITEMS for k, v in item.items()])  # filters that match
filters = st.lists(
    st.one_of(existing, st.tuples(st.sampled_from(FIELDS), st.one_of(values, operator_conditions))),
    max_size=2,
).map(dict)


@pytest.fixture()
def both_stores(make_manager: Callable[..., MemoryManager]) -> tuple[PgMemStore, InMemoryStore]:
    ours, theirs = PgMemStore(make_manager("filter_user")), InMemoryStore()
    for n, value in enumerate(ITEMS):
        ours.put(("f",), str(n), value)
        theirs.put(("f",), str(n), value)
    return ours, theirs


def _same_types(conditions: dict[str, Any], item: dict[str, Any]) -> bool:
    """LangGraph converts an order operator's operands with float(): a number and a numeric
    string, or a boolean and a number (float(True) is 1.0), compare there, never here (module
    filters)."""
    for name, condition in conditions.items():
        ordered = isinstance(condition, dict) and any(k in ("$gt", "$gte", "$lt", "$lte") for k in condition)
        value = item.get(name)
        if ordered and (
            isinstance(value, bool)
            or isinstance(value, str) != any(isinstance(v, str) for v in condition.values())
        ):
            return False
    return True


def _langgraph_keys(store: InMemoryStore, conditions: dict[str, Any]) -> set[str] | None:
    try:
        return {i.key for i in store.search(("f",), filter=conditions, limit=100)}
    except (TypeError, ValueError):
        return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(conditions=filters)
def test_filters_match_as_langgraph_s(
    both_stores: tuple[PgMemStore, InMemoryStore], conditions: dict[str, Any]
) -> None:
    ours, theirs = both_stores
    found = {i.key for i in ours.search(("f",), filter=conditions, limit=100)}
    expected = _langgraph_keys(theirs, conditions)
    if expected is None:  # LangGraph's float() failed on an operand: compared in its own type here
        return
    comparable = {str(n) for n, item in enumerate(ITEMS) if _same_types(conditions, item)}
    assert found & comparable == expected & comparable, conditions


@pytest.mark.parametrize(
    "conditions",
    [
        {"n": {"$lt": math.inf}},
        {"n": {"$gte": -math.inf}},
        {"n": {"$gt": math.inf}},
        {"n": {"$lte": math.nan}},
        {"n": math.nan},
        {"n": {"$ne": math.nan}},
        {"s": "a\x00"},
        {"s": {"$ne": "a\x00"}},
        {"d": {"y": "z\x00"}},
    ],
)
def test_values_no_item_can_hold_compare_as_langgraph_s(
    both_stores: tuple[PgMemStore, InMemoryStore], conditions: dict[str, Any]
) -> None:
    """NaN, ±infinity and strings holding NUL are taken, and match what LangGraph's store matches
    (asked item by item: it raises for the whole search when one item's value fails float())."""
    ours, _ = both_stores
    found = {i.key for i in ours.search(("f",), filter=conditions, limit=100)}
    expected = set()
    for n, item in enumerate(ITEMS):
        alone = InMemoryStore()
        alone.put(("f",), str(n), item)
        matched = _langgraph_keys(alone, conditions)
        if matched is None or not _same_types(conditions, item):
            found.discard(str(n))
        else:
            expected |= matched
    assert found == expected


def test_a_query_or_an_ordered_string_with_nul_is_a_clear_error(store: PgMemStore) -> None:
    store.put(("f",), "k", {"text": "hello"})
    with pytest.raises(InvalidInputError, match="query: must not contain NUL"):
        store.search(("f",), query="hel\x00lo")
    with pytest.raises(ValueError, match="filter field 'text': \\$gt compares with a string without NUL"):
        store.search(("f",), filter={"text": {"$gt": "a\x00"}})


def test_order_operators_compare_numbers_with_numbers(both_stores: tuple[PgMemStore, InMemoryStore]) -> None:
    ours, _ = both_stores
    assert {i.key for i in ours.search(("f",), filter={"n": {"$gt": 0}})} == {"0", "1", "5"}
    assert {i.key for i in ours.search(("f",), filter={"n": {"$lte": 0}})} == {"2"}, (
        "the string '2' is no number"
    )
    assert {i.key for i in ours.search(("f",), filter={"s": {"$gte": "ab"}})} == {"1", "2"}
    assert {i.key for i in ours.search(("f",), filter={"missing": {"$ne": 1}})} == {str(n) for n in range(7)}
    assert {i.key for i in ours.search(("f",), filter={"d": {"x": None}})} == {"2", "5"}
    assert {i.key for i in ours.search(("f",), filter={"b": {"$lt": 2}})} == set(), "a boolean is no number"


# ---------------------------------------------------------------------------- concurrency


def test_concurrent_puts_of_a_new_key_end_in_one_item(store: PgMemStore, clean: Database) -> None:
    async def race(n: int) -> None:
        await asyncio.gather(*(store.aput(("race",), f"k{n}", {"writer": w}) for w in range(4)))

    async def scenario() -> None:
        await asyncio.gather(*(race(n) for n in range(10)))

    asyncio.run(scenario())
    for n in range(10):
        item = store.get(("race",), f"k{n}")
        assert item is not None and item.value["writer"] in range(4)
    assert stored_items(clean) == 10


def test_deletes_racing_puts_leave_a_whole_item_or_none(store: PgMemStore, clean: Database) -> None:
    errors: list[BaseException] = []

    def hammer(writer: int) -> None:
        try:
            for round_ in range(15):
                if (writer + round_) % 3 == 0:
                    store.delete(("race",), "k")
                else:
                    store.put(("race",), "k", {"writer": writer, "round": round_})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    item = store.get(("race",), "k")
    assert item is None or set(item.value) == {"writer", "round"}
    assert stored_items(clean) == (0 if item is None else 1)


def test_a_forgotten_item_can_be_put_again(store: PgMemStore, clock: Any) -> None:
    store.put(("ns",), "k", {"v": "old"})
    old = store.get(("ns",), "k")
    assert old is not None
    assert store.memory.forget_memories("importance_based", threshold=1.0, confirm=True) == 1
    assert store.get(("ns",), "k") is None and store.search(("ns",)) == []
    clock.advance(hours=1)
    store.put(("ns",), "k", {"v": "new"})
    new = store.get(("ns",), "k")
    assert new is not None and new.value == {"v": "new"} and new.created_at > old.created_at
    assert [i.key for i in store.search(("ns",))] == ["k"]


def test_a_graph_with_two_branches_writing_one_key(store: PgMemStore) -> None:
    from langgraph.graph import END, START, StateGraph
    from langgraph.store.base import BaseStore
    from typing_extensions import TypedDict

    class State(TypedDict):
        n: int

    def writer(name: str) -> Callable[..., dict[str, Any]]:
        def write(state: State, *, store: BaseStore) -> dict[str, Any]:
            store.put(("shared",), "key", {"by": name, "n": state["n"]})
            return {}

        return write

    builder = StateGraph(State)
    builder.add_node("left", writer("left"))
    builder.add_node("right", writer("right"))
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    builder.add_edge("left", END)
    builder.add_edge("right", END)
    graph = builder.compile(store=store)
    for n in range(10):
        graph.invoke({"n": n})
        item = store.get(("shared",), "key")
        assert item is not None and item.value["n"] == n and item.value["by"] in ("left", "right")


def test_item_ids_are_stable_per_namespace_and_key() -> None:
    assert item_id(("a", "b"), "k") == item_id(["a", "b"], "k")
    assert item_id(("a", "b"), "k") != item_id(("a",), "b.k") != item_id(("a", "b", "k"), "")
