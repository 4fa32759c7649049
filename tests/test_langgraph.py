"""PgMemStore, the LangGraph store over hello_pgmem: each BaseStore method's contract against the
real database, sync and async, and an agent graph that uses it as its long-term memory."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from typing_extensions import TypedDict

from hello_pgmem import Database, InvalidInputError
from hello_pgmem.integrations.langgraph import PgMemStore
from hello_pgmem.memory import MemoryManager
from tests.conftest import row_counts
from tests.patience import patience
from tests.test_embedding_queue import waits_for_a_lock
from tests.test_temporal import server_now


@pytest.fixture()
def store(make_manager: Callable[..., MemoryManager]) -> PgMemStore:
    return PgMemStore(make_manager("graph_user"), index=["text"])


def test_put_get_update_delete(store: PgMemStore, clean: Database) -> None:
    store.put(("users", "alice"), "food", {"text": "Alice likes ramen", "rating": 5})
    item = store.get(("users", "alice"), "food")
    assert item is not None and item.value == {"text": "Alice likes ramen", "rating": 5}
    assert (item.namespace, item.key) == (("users", "alice"), "food")
    store.put(("users", "alice"), "food", {"text": "Alice now prefers udon", "rating": 4})
    again = store.get(("users", "alice"), "food")
    assert again is not None and again.value["text"] == "Alice now prefers udon"
    assert again.updated_at >= item.updated_at and again.created_at == item.created_at
    assert row_counts(clean)["memories"] == 2  # the item, and its earlier value (docs/temporal.md)
    assert store.get(("users", "bob"), "food") is None
    store.delete(("users", "alice"), "food")
    assert store.get(("users", "alice"), "food") is None and row_counts(clean)["memories"] == 2


def test_a_store_known_at_a_time_reads_the_items_as_they_were(store: PgMemStore, clean: Database) -> None:
    store.put(("users", "alice"), "food", {"text": "Alice likes ramen"})
    store.put(("users", "alice"), "drink", {"text": "Alice drinks green tea"})
    ramen_time = server_now(clean)
    store.put(("users", "alice"), "food", {"text": "Alice now prefers udon"})
    store.delete(("users", "alice"), "drink")
    then = PgMemStore(store.memory, index=["text"], known_at=ramen_time)
    food = then.get(("users", "alice"), "food")
    assert food is not None and food.value == {"text": "Alice likes ramen"}
    drink = then.get(("users", "alice"), "drink")
    assert drink is not None and drink.value == {"text": "Alice drinks green tea"}
    assert sorted(i.value["text"] for i in then.search(("users",))) == [
        "Alice drinks green tea",
        "Alice likes ramen",
    ]
    found = then.search(("users", "alice"), query="what noodles does Alice like")
    assert [i.value["text"] for i in found][:1] == ["Alice likes ramen"]
    now = store.get(("users", "alice"), "food")
    assert now is not None and now.value["text"] == "Alice now prefers udon"
    assert store.get(("users", "alice"), "drink") is None
    assert [i.key for i in store.search(("users",))] == ["food"]
    with pytest.raises(InvalidInputError, match="known_at"):
        then.put(("users", "alice"), "food", {"text": "no"})


def test_search_by_meaning_filter_and_prefix(store: PgMemStore) -> None:
    store.put(
        ("users", "alice", "prefs"), "a", {"text": "Alice enjoys hiking in the Alps", "kind": "hobby", "n": 3}
    )
    store.put(
        ("users", "alice", "prefs"), "b", {"text": "Alice is allergic to peanuts", "kind": "health", "n": 7}
    )
    store.put(
        ("users", "alice", "notes"), "c", {"text": "Meeting notes about hiking gear", "kind": "note", "n": 1}
    )
    store.put(("users", "bob", "prefs"), "d", {"text": "Bob enjoys hiking too", "kind": "hobby", "n": 5})
    found = store.search(("users", "alice"), query="hiking in the Alps")
    assert [i.key for i in found][:1] == ["a"] and {i.key for i in found} <= {"a", "b", "c"}
    assert all(i.score is not None for i in found)
    assert [i.key for i in store.search(("users", "alice"), filter={"kind": "health"})] == ["b"]
    assert {i.key for i in store.search(("users",), filter={"n": {"$gte": 3}})} == {"a", "b", "d"}
    assert {i.key for i in store.search(("users", "alice", "prefs"))} == {"a", "b"}
    assert len(store.search(("users",), limit=2)) == 2
    assert len(store.search(("users",), limit=2, offset=3)) == 1


def test_list_namespaces(store: PgMemStore) -> None:
    for namespace in (("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z",)):
        store.put(namespace, "k", {"text": "t"})
    assert store.list_namespaces() == [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z",)]
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d")]
    assert store.list_namespaces(suffix=("d",)) == [("a", "b", "d")]
    assert store.list_namespaces(prefix=("a", "*", "c")) == [("a", "b", "c")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("z",)]
    assert store.list_namespaces(limit=1, offset=1) == [("a", "b", "d")]


def test_async_methods_and_batch(store: PgMemStore) -> None:
    async def scenario() -> None:
        await store.aput(("docs",), "one", {"text": "PostgreSQL row-level security"})
        await store.aput(("docs",), "two", {"text": "pgvector HNSW indexes"})
        item = await store.aget(("docs",), "one")
        assert item is not None and item.value["text"].startswith("PostgreSQL")
        hits = await store.asearch(("docs",), query="vector index")
        assert hits[0].key == "two"
        await store.adelete(("docs",), "two")
        assert await store.aget(("docs",), "two") is None

    asyncio.run(scenario())


def test_each_store_sees_only_its_user(make_manager: Callable[..., MemoryManager]) -> None:
    mine, theirs = PgMemStore(make_manager("u1")), PgMemStore(make_manager("u2"))
    mine.put(("shared", "path"), "secret", {"text": "only u1 knows"})
    assert theirs.get(("shared", "path"), "secret") is None
    assert theirs.search(("shared",)) == [] and theirs.list_namespaces() == []
    assert mine.get(("shared", "path"), "secret") is not None


class State(TypedDict):
    question: str
    answer: str


def test_a_graph_remembers_across_threads(store: PgMemStore) -> None:
    """A two-node graph: the first node stores what it learns, the second recalls it."""

    def learn(state: State, *, store: BaseStore) -> dict[str, Any]:
        store.put(("memories",), "fact", {"text": state["question"]})
        return {}

    def recall(state: State, *, store: BaseStore) -> dict[str, Any]:
        hits = store.search(("memories",), query=state["question"], limit=1)
        return {"answer": hits[0].value["text"] if hits else ""}

    builder = StateGraph(State)
    builder.add_node("learn", learn)
    builder.add_node("recall", recall)
    builder.add_edge(START, "learn")
    builder.add_edge("learn", "recall")
    builder.add_edge("recall", END)
    graph = builder.compile(store=store)
    result = graph.invoke({"question": "The launch is on Friday", "answer": ""})
    assert result["answer"] == "The launch is on Friday"
    recall_only = StateGraph(State)
    recall_only.add_node("recall", recall)
    recall_only.add_edge(START, "recall")
    recall_only.add_edge("recall", END)
    later = recall_only.compile(store=store).invoke({"question": "when is the launch?", "answer": ""})
    assert later["answer"] == "The launch is on Friday"


def test_a_search_embeds_the_few_items_just_put(clean: Database) -> None:
    """With a model whose vectors come after the write, a query search embeds the user's few
    queued items first, as retrieve_memories does: what was just put is found by meaning."""
    from hello_pgmem import HashingEmbedder, Store

    settings = clean.settings.model_copy(update={"embed": "queue", "embedding_queue_workers": 0})
    with Database(settings) as db, Store(database=db, embedder=HashingEmbedder()) as front:
        items = PgMemStore(front.memory("queued_graph_user"), index=["text"])
        items.put(("notes",), "car", {"text": "a red car parked outside"})

        def waiting() -> int:
            with db.transaction("queued_graph_user") as conn:
                row = conn.execute("SELECT count(*) FROM memory_embedding_queue").fetchone()
            return int(row[0]) if row else 0

        assert waiting() == 1
        [hit] = items.search(("notes",), query="red car")
        assert hit.key == "car" and waiting() == 0


def expiry(db: Database, user: str, key: str) -> Any:
    """The item's expiry as the server sees it: seconds from now (None: never)."""
    with db.transaction(user) as conn:
        row = conn.execute(
            "SELECT extract(epoch FROM expires_at - now()) FROM memories"
            " WHERE user_id = %s AND metadata -> 'langgraph' ->> 'key' = %s AND version_of IS NULL",
            (user, key),
        ).fetchone()
    return None if row is None or row[0] is None else float(row[0])


def expire_now(db: Database, user: str, key: str) -> None:
    """Move the item's expiry into the past, as if its ttl had run out (no sweep yet)."""
    with db.transaction(user) as conn:
        conn.execute(
            "UPDATE memories SET expires_at = now() - interval '1 minute'"
            " WHERE user_id = %s AND metadata -> 'langgraph' ->> 'key' = %s",
            (user, key),
        )


def test_an_item_expires_its_ttl_after_its_put_or_its_last_refreshing_read(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    store = PgMemStore(make_manager("ttl_user"), index=["text"], ttl={"default_ttl": 30})
    store.put(("notes",), "kept", {"text": "Ada keeps bees"}, ttl=None)
    store.put(("notes",), "default", {"text": "Ada keeps wasps"})
    store.put(("notes",), "short", {"text": "Ada keeps ants"}, ttl=2)
    assert expiry(clean, "ttl_user", "kept") is None
    assert 29 * 60 < expiry(clean, "ttl_user", "default") <= 30 * 60
    assert 60 < expiry(clean, "ttl_user", "short") <= 120
    with clean.transaction("ttl_user") as conn:
        conn.execute(
            "UPDATE memories SET expires_at = now() + interval '10 seconds' WHERE expires_at IS NOT NULL"
        )
    assert store.get(("notes",), "short", refresh_ttl=False) is not None
    assert expiry(clean, "ttl_user", "short") <= 10, "a read that does not refresh leaves it"
    assert store.get(("notes",), "short") is not None  # refresh_on_read: True by default
    assert 60 < expiry(clean, "ttl_user", "short") <= 120
    assert [item.key for item in store.search(("notes",), query="wasps", limit=1)] == ["default"]
    assert 29 * 60 < expiry(clean, "ttl_user", "default") <= 30 * 60, "a search refreshes what it returns"
    with pytest.raises(InvalidInputError, match="ttl: must be a positive number"):
        store.put(("notes",), "bad", {"text": "never"}, ttl=-1)


def test_a_refreshing_read_refreshes_an_item_another_transaction_holds(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    """An item whose row another transaction holds when a read refreshes (an embedding worker
    storing its vector, here a transaction of the test's) is refreshed once it is let go."""
    store = PgMemStore(make_manager("held_user"), index=["text"], ttl={"default_ttl": 30})
    store.put(("notes",), "held", {"text": "Ada keeps bees"})
    with clean.transaction("held_user") as conn:
        conn.execute(
            "UPDATE memories SET expires_at = now() + interval '10 seconds' WHERE expires_at IS NOT NULL"
        )
    found: list[Any] = []
    with clean.transaction("held_user") as holding:
        holding.execute("SELECT 1 FROM memories WHERE user_id = 'held_user' FOR NO KEY UPDATE")
        reading = threading.Thread(target=lambda: found.append(store.get(("notes",), "held")))
        reading.start()
        deadline = time.monotonic() + patience(30)
        while reading.is_alive() and not waits_for_a_lock(clean) and time.monotonic() < deadline:
            time.sleep(0.02)
    reading.join(patience(30))
    assert found and found[0] is not None
    assert 29 * 60 < expiry(clean, "held_user", "held") <= 30 * 60


@pytest.mark.parametrize("omit", [True, False])
def test_expired_items_are_left_out_when_asked_and_forgotten_by_the_sweep(
    make_manager: Callable[..., MemoryManager], clean: Database, omit: bool
) -> None:
    store = PgMemStore(make_manager("sweep_user"), index=["text"], ttl={"omit_expired": omit})
    store.put(("gone",), "e", {"text": "the expired note"}, ttl=5)
    store.put(("kept",), "c", {"text": "the kept note"})
    expire_now(clean, "sweep_user", "e")
    assert (store.get(("gone",), "e") is None) == omit
    assert (store.search(("gone",)) == []) == omit
    assert (("gone",) in store.list_namespaces()) != omit
    assert store.get(("gone",), "e", refresh_ttl=True) is None or not omit
    assert expiry(clean, "sweep_user", "e") < 0, "a refreshing read does not bring an expired item back"
    assert store.sweep_ttl() == 1 and store.sweep_ttl() == 0
    assert store.get(("gone",), "e") is None and store.get(("kept",), "c") is not None
    store.put(("gone",), "e", {"text": "the note again"})
    again = store.get(("gone",), "e")
    assert again is not None and again.value == {"text": "the note again"}


def test_maintain_and_the_sweeper_forget_expired_items(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    from hello_pgmem.ops.maintain import maintain
    from tests.patience import patience

    store = PgMemStore(make_manager("swept_user"), index=["text"], ttl={"sweep_interval_minutes": 1})
    other = PgMemStore(make_manager("other_swept"), index=["text"])
    store.put(("a",), "one", {"text": "one"}, ttl=5)
    other.put(("b",), "two", {"text": "two"}, ttl=5)
    expire_now(clean, "swept_user", "one")
    expire_now(clean, "other_swept", "two")
    assert maintain(clean, analyze=False)["expired_items"] == 2
    assert store.get(("a",), "one") is None and other.get(("b",), "two") is None
    store.put(("a",), "three", {"text": "three"}, ttl=5)
    expire_now(clean, "swept_user", "three")
    running = store.start_ttl_sweeper(sweep_interval_minutes=0.001)
    deadline = time.monotonic() + patience(30)
    while store.get(("a",), "three") is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.get(("a",), "three") is None, "the sweeper forgot it"
    assert store.stop_ttl_sweeper(timeout=patience(10)) and running.done()
