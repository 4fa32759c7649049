"""Each memory's stored context window follows every kind of write: a store built by many small
writes (sessions out of time order, turns slotted into a session, corrections, updates that move a
memory in time, removals, forgetting and restoring, a consolidation) holds the same windows and
ranks every question as a store given the same memories in one batch; and a migration's fill
makes them for memories stored before."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hello_pgmem import Database
from hello_pgmem.core.models import MemoryConfig
from hello_pgmem.memory import MemoryManager
from hello_pgmem.ops.check import check_integrity
from hello_pgmem.ops.contexts import fill_contexts

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
NO_GRAPH = MemoryConfig(graph_search=False)  # the graph's entities follow other rules than windows
QUESTIONS = [
    "what did Mira cook for the harbour festival",
    "when did the ferry to the lighthouse leave",
    "Jonas and the broken bicycle",
    "who planted tomatoes on the balcony",
    "Mira",
    "the lighthouse keeper's cat",
    "something about zebras",
]
TURNS = {
    "s1": [
        "Mira cooked a fish stew for the harbour festival",
        "Jonas said the stew needed more lemon",
        "They walked to the lighthouse after lunch",
        "The lighthouse keeper has a grey cat",
        "Mira wants to paint the cat one day",
    ],
    "s2": [
        "Jonas broke his bicycle on the cobbles",
        "The repair shop near the harbour fixed the chain",
        "Mira planted tomatoes on the balcony",
        "The ferry to the lighthouse left at seven",
    ],
    "s3": [
        "A quiet evening with tea and a book",
        "Jonas read about lighthouses of the north",
    ],
}


def at(session: str, turn: int, minutes: int = 0) -> datetime:
    day = {"s1": 0, "s2": 30, "s3": 60}[session]
    return START + timedelta(days=day, hours=turn, minutes=minutes)


def built_by_small_writes(make: Callable[..., MemoryManager]) -> MemoryManager:
    memory = make("small_writes", config=NO_GRAPH)
    ids: dict[str, Any] = {}
    for session in ("s3", "s2", "s1"):  # the latest session first: sessions out of time order
        for turn, text in enumerate(TURNS[session]):
            if (session, turn) != ("s1", 2):
                [ids[text]] = memory.add_memories(
                    [text], importance=0.5, timestamps=[at(session, turn)], session_ids=[session]
                )
    slotted = TURNS["s1"][2]  # a turn slotted between two of its session's
    [ids[slotted]] = memory.add_memories(
        [slotted], importance=0.5, timestamps=[at("s1", 2)], session_ids=["s1"]
    )
    memory.update_memory(ids[TURNS["s1"][1]], content="Jonas said the stew needed more salt", correction=True)
    memory.update_memory(  # an update that moves the memory later in its session
        ids[TURNS["s2"][0]], content="Jonas broke his bicycle on the hill", valid_from=at("s2", 1, 30)
    )
    memory.remove_memory(ids[TURNS["s3"][0]])
    [extra] = memory.add_memories(
        ["Mira lost her scarf at the festival"],
        importance=0.05,
        timestamps=[at("s1", 4, 30)],
        session_ids=["s1"],
    )
    assert memory.forget_memories("importance_based", threshold=0.1) == 1
    assert memory.restore_memories([extra]) == 1
    [gone] = memory.add_memories(
        ["The weather turned cold"], importance=0.05, timestamps=[at("s2", 2, 30)], session_ids=["s2"]
    )
    assert memory.forget_memories("importance_based", threshold=0.1) == 2  # the scarf and the weather
    memory.restore_memories([extra])
    assert gone not in {m.id for m in memory.list_memories("episodic")}
    return memory


def live_rows(db: Database, user: str) -> list[tuple[Any, ...]]:
    with db.transaction(user) as conn:
        return conn.execute(
            "SELECT memory_type, content, importance, session_id, created_at FROM memories"
            " WHERE user_id = %s AND forgotten_at IS NULL ORDER BY created_at, seq",
            (user,),
        ).fetchall()


def in_one_batch(make: Callable[..., MemoryManager], rows: list[tuple[Any, ...]]) -> MemoryManager:
    memory = make("one_batch", config=NO_GRAPH)
    for kind in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == kind]
        memory.add_memories(
            [r[1] for r in mine],
            kind,
            importance=[r[2] for r in mine],
            timestamps=[r[4] for r in mine],
            session_ids=[r[3] for r in mine],
        )
    return memory


def windows(db: Database, user: str) -> dict[str, tuple[str, int]]:
    with db.transaction(user) as conn:
        rows = conn.execute(
            "SELECT m.content, c.lexemes::text, c.length FROM memory_contexts c"
            " JOIN memories m ON m.user_id = c.user_id AND m.id = c.memory_id WHERE c.user_id = %s",
            (user,),
        ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def ranking(memory: MemoryManager, question: str, scoring: str) -> dict[str, float]:
    hits = memory.retrieve_memories(question, limit=10, scoring=scoring, track_access=False)
    return {hit.content: hit.score or 0.0 for hit in hits}


@pytest.fixture()
def make(make_manager: Callable[..., MemoryManager]) -> Callable[..., MemoryManager]:
    def made(user: str, **options: Any) -> MemoryManager:
        return make_manager(user, enable_semantic=True, enable_working=False, **options)

    return made


def test_small_writes_rank_as_one_batch(make: Callable[..., MemoryManager], clean: Database) -> None:
    small = built_by_small_writes(make)
    small.consolidate_memories("episodic", "semantic", importance_threshold=0.9)  # none moves
    rows = live_rows(clean, "small_writes")
    batch = in_one_batch(make, rows)
    assert len(rows) == len(live_rows(clean, "one_batch")) == 11
    assert windows(clean, "small_writes") == windows(clean, "one_batch")
    for question in QUESTIONS:
        for scoring in ("hybrid", "lexical"):
            mine, theirs = ranking(small, question, scoring), ranking(batch, question, scoring)
            assert mine.keys() == theirs.keys(), (question, scoring, mine, theirs)
            assert all(abs(mine[c] - theirs[c]) < 0.001 for c in mine), (question, scoring, mine, theirs)
    report = check_integrity(clean)
    assert report.ok, report.text()


def test_a_consolidation_changes_the_windows_type(
    make: Callable[..., MemoryManager], clean: Database
) -> None:
    memory = make("moving")
    memory.add_memories(
        ["the harbour festival", "a fish stew", "lemon and salt"], importance=[0.95, 0.2, 0.2]
    )
    assert memory.consolidate_memories("episodic", "semantic", importance_threshold=0.9) == 1
    with clean.transaction("moving") as conn:
        kinds = dict(
            conn.execute(
                "SELECT m.content, c.memory_type FROM memory_contexts c"
                " JOIN memories m ON m.user_id = c.user_id AND m.id = c.memory_id"
            ).fetchall()
        )
    assert kinds == {
        "the harbour festival": "semantic",
        "a fish stew": "episodic",
        "lemon and salt": "episodic",
    }
    hits = memory.retrieve_memories(
        "festival", memory_types=["semantic"], scoring="lexical", track_access=False
    )
    assert [h.content for h in hits] == ["the harbour festival"]
    assert check_integrity(clean).ok


def test_a_users_windows_made_by_the_migration_rank_as_they_were_kept(
    make: Callable[..., MemoryManager], clean: Database
) -> None:
    """A user whose windows were never kept (a store from before revision 0004) searches the windows
    made from memories until the fill, which makes exactly the rows the triggers keep."""
    memory = built_by_small_writes(make)
    kept = windows(clean, "small_writes")
    before = {q: ranking(memory, q, "hybrid") for q in QUESTIONS}
    with clean.transaction("small_writes") as conn:
        conn.execute("DELETE FROM memory_contexts WHERE user_id = 'small_writes'")
        conn.execute("UPDATE memory_text_totals SET contexts_ready = false WHERE user_id = 'small_writes'")
    assert {q: ranking(memory, q, "hybrid") for q in QUESTIONS} == before
    seen: list[tuple[int, int]] = []
    assert fill_contexts(clean.settings, lambda made, total: seen.append((made, total)), batch=5) == len(kept)
    assert seen[-1] == (len(kept), len(kept)) and len(seen) == 3
    assert windows(clean, "small_writes") == kept
    assert {q: ranking(memory, q, "hybrid") for q in QUESTIONS} == before
    assert check_integrity(clean).ok
