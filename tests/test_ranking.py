"""Ranking properties of the hybrid search, on the real database: relevance first, a rare word
found among many, results that do not move as the limit grows, time named in the question."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from uuid import UUID

import numpy as np
import pytest

from hello_pgmem import Database, HashingEmbedder
from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import Fusion, MemoryConfig
from hello_pgmem.embedding import Embedder
from hello_pgmem.memory import MemoryManager
from tests.conftest import Clock, row_counts

_TOPICS = (
    "coffee morning walk garden book movie dinner friend work meeting weather rain sunny music "
    "guitar painting kids school weekend trip beach mountain city train car bike lunch recipe "
    "cake birthday party gift phone call email project deadline office team plan idea story"
)
WORDS = _TOPICS.split()


def chatter(count: int, seed: int = 7) -> list[str]:
    """Plausible small talk that shares the common words of the questions below."""
    pick = random.Random(seed)
    return [
        f"{pick.choice(['Alice', 'Bob'])}: I had a {pick.choice(WORDS)} and a {pick.choice(WORDS)} "
        f"with my {pick.choice(WORDS)} on the {pick.choice(WORDS)}, what a day"
        for _ in range(count)
    ]


def add_chat(manager: MemoryManager, clock: Clock, texts: list[str], sessions: list[str]) -> list[UUID]:
    """Chat turns as episodic memories, a minute apart and ending now, each in its session."""
    return manager.add_memories(
        texts,
        "episodic",
        timestamps=[clock() - timedelta(minutes=len(texts) - i) for i in range(len(texts))],
        session_ids=sessions,
    )


def test_an_old_strong_match_outranks_a_fresh_weak_one(
    make_manager: Callable[..., MemoryManager], clock: Clock
) -> None:
    manager = make_manager()
    old = manager.add_memory(
        "Alice adopted a golden retriever puppy named Biscuit from the shelter",
        "episodic",
        0.3,
        timestamp=clock() - timedelta(days=700),
    )
    manager.add_memories(chatter(30), "episodic", importance=0.9)  # fresh, important, weakly related
    manager.add_memory("Alice said the shelter was busy today", "episodic", 1.0)
    [first, *_] = manager.retrieve_memories("What is the name of Alice's golden retriever?", limit=5)
    assert first.id == old
    assert first.components["recency_score"] < 0.01  # nearly two years old, and still first
    reference = manager.retrieve_memories(
        "What is the name of Alice's golden retriever?", scoring="reference"
    )
    assert reference[0].id != old  # the reference's recency term puts a fresh memory first


def test_an_exact_rare_keyword_is_found_among_ten_thousand(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    manager = make_manager()
    manager.add_memories(chatter(9_999, seed=11), "episodic")
    needle = manager.add_memory("Bob: my locker code at the gym is QX-7741, do not tell anyone", "episodic")
    for question in ("what is the QX-7741 code for?", "Bob's locker code", "qx-7741"):
        found = manager.retrieve_memories(question, limit=3)
        assert found[0].id == needle, question
    assert row_counts(clean)["memories"] == 10_000


@pytest.mark.parametrize("fusion", ["weighted", "spread", "minmax"])
def test_results_do_not_move_as_the_limit_grows(
    make_manager: Callable[..., MemoryManager], clock: Clock, fusion: Fusion
) -> None:
    """Past the vector branch's pool of 40 too: the memories a larger limit adds come below."""
    manager = make_manager(config=MemoryConfig(fusion=fusion))
    texts = chatter(300, seed=3)
    manager.add_memories(
        texts,
        "episodic",
        timestamps=[clock() - timedelta(hours=i) for i in range(len(texts))],
        metadata=[{"speaker": t.split(":")[0]} for t in texts],
        session_ids=[f"s{i // 20}" for i in range(len(texts))],
    )
    for question in ("What did Alice paint at the weekend?", "Bob's birthday party", "guitar music"):
        tops = [
            [m.id for m in manager.retrieve_memories(question, limit=n, track_access=False)]
            for n in (3, 10, 40, 120)
        ]
        assert tops[1][:3] == tops[0] and tops[2][:10] == tops[1] and tops[3][:40] == tops[2], question


def test_a_time_named_in_the_question_prefers_memories_of_that_time(
    make_manager: Callable[..., MemoryManager], clock: Clock
) -> None:
    clock.now = datetime(2024, 3, 1, 12, tzinfo=UTC)  # what "last August" means; no server time is read
    manager = make_manager()
    may = manager.add_memory(
        "Went hiking with Sam by the lake", "episodic", timestamp=datetime(2023, 5, 14, tzinfo=UTC)
    )
    august = manager.add_memory(
        "Went hiking with Sam by the lake", "episodic", timestamp=datetime(2023, 8, 20, tzinfo=UTC)
    )
    recent = manager.add_memory(
        "Went hiking with Sam by the lake", "episodic", timestamp=clock() - timedelta(days=2)
    )
    assert manager.retrieve_memories("Who went hiking in May 2023?", limit=1)[0].id == may
    assert manager.retrieve_memories("hiking last August", limit=1)[0].id == august
    assert manager.retrieve_memories("去年五月和谁去爬山了？hiking", limit=1)[0].id == may
    assert (
        manager.retrieve_memories("hiking with Sam", limit=1)[0].id == recent
    )  # no time: recency breaks the tie
    [hit] = manager.retrieve_memories("Who went hiking in May 2023?", limit=1)
    assert hit.components["time_score"] == 1.0


def test_a_memory_is_found_by_its_neighbours_words(
    make_manager: Callable[..., MemoryManager], clock: Clock
) -> None:
    """The answer shares no word with the question; the turn before it does (context BM25)."""
    manager = make_manager()
    turns = [
        "Bob: how was the adoption agency interview last week?",
        "Alice: it went really well, they said we should hear back in a month",
        "Bob: fingers crossed for you",
    ]
    ids = add_chat(manager, clock, [*chatter(50), *turns], ["s1"] * 53)
    found = [m.id for m in manager.retrieve_memories("How did Alice's adoption interview go?", limit=3)]
    assert ids[-3] in found and ids[-2] in found


def test_an_answer_two_turns_after_the_question_words_is_found(
    make_manager: Callable[..., MemoryManager], clock: Clock
) -> None:
    """A reply often comes a turn later than the question it answers: the context reaches two
    memories on each side."""
    manager = make_manager()
    turns = [
        "Bob: how was the adoption agency interview last week?",
        "Bob: sorry, hold on, my phone is ringing",
        "Alice: it went really well, they said we should hear back in a month",
    ]
    texts = [*chatter(30), *turns, *chatter(30, seed=8)]
    ids = add_chat(manager, clock, texts, ["s1"] * len(texts))
    found = [m.id for m in manager.retrieve_memories("How did Alice's adoption interview go?", limit=4)]
    assert ids[30] in found and ids[32] in found


def test_a_neighbour_holding_only_a_common_query_word_is_ranked_by_it(
    make_manager: Callable[..., MemoryManager], clock: Clock
) -> None:
    """Among more than 200 memories a word in most of them makes no candidate alone, but a
    candidate's neighbour that holds it is scored by it; a neighbour without a query word is not."""
    manager = make_manager()
    turns = [
        "Bob: any news from town?",
        "Alice: the zeppelin museum opens on Friday",
        "Bob: what a lovely day",
    ]
    texts = [*chatter(240), *turns, *chatter(20, seed=8)]  # every chatter turn says "what a day"
    ids = add_chat(manager, clock, texts, ["s1"] * len(texts))
    found = {m.id: m for m in manager.retrieve_memories("Which day does the zeppelin museum open?", limit=10)}
    silent, answer, common = ids[240:243]
    assert answer in found and common in found
    assert found[common].components["text_score"] > 0
    assert silent not in found or found[silent].components["text_score"] == 0


def test_with_no_rare_word_the_candidates_hold_every_word(
    make_manager: Callable[..., MemoryManager], clock: Clock
) -> None:
    """With more than 200 memories and each query word in more than 200 of them, the candidates are
    the memories that hold them all. The index looks up the rarest words only (zorb and quil: their
    memories, were they independent, would be about 46 of 1,000) and velm is checked in the rows
    it finds: the short memories that hold zorb and quil but not velm, which would rank first,
    are no candidates."""
    manager = make_manager()
    filler = "with a long list of other plain words that only make this note longer"
    groups = [
        (f"zorb quil velm {filler}", 40),
        ("zorb quil", 100),
        ("zorb velm", 70),
        ("quil velm", 80),
        ("velm", 710),
    ]
    texts = [f"note {n}: {words}" for n, words in enumerate(w for w, count in groups for _ in range(count))]
    ids = add_chat(manager, clock, texts, [f"s{n}" for n in range(len(texts))])  # no neighbours
    found = manager.retrieve_memories("zorb quil velm", limit=50, scoring="lexical")
    assert {m.id for m in found} == set(ids[:40])


def test_a_session_about_the_question_outranks_scattered_mentions(
    make_manager: Callable[..., MemoryManager], clock: Clock
) -> None:
    """Turns that each name one of the question's words rank first where their session is about
    the question, not where the word is a passing mention amid other talk."""
    manager = make_manager()
    about = [
        "Alice: we picked the tiles today",
        "Alice: the kitchen looks bigger already",
        "Bob: and the cabinets?",
        "Alice: the renovation crew fits them on Monday",
        "Bob: great",
    ]
    mentions = [
        "Bob: the kitchen light flickers again",
        "Alice: the renovation of the station starts soon",
        "Bob: I cleaned the kitchen after the party",
        "Alice: they talked about a renovation on the radio",
    ]
    texts: list[str] = []
    sessions: list[str] = []
    for n, mention in enumerate(mentions):
        talk = chatter(6, seed=20 + n)
        texts += [*talk[:3], mention, *talk[3:]]
        sessions += [f"s{n}"] * 7
    texts += about
    sessions += ["kitchen"] * len(about)
    ids = add_chat(manager, clock, texts, sessions)
    top = [m.id for m in manager.retrieve_memories("How is the kitchen renovation going?", limit=2)]
    assert set(top) == {ids[-4], ids[-2]}


class NearlyConstant(Embedder):
    """Every text at almost the same point: cosine similarities that differ in the sixth digit."""

    model_name = "nearly-constant-8"
    dimension = 8

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        noise = [random.Random(t).uniform(-1e-6, 1e-6) for t in texts]
        return np.array([[1.0, 0.5, 0.25, 0.125, 0.0, 0.0, 0.0, n] for n in noise], dtype=np.float32)


class Scattered(NearlyConstant):
    """Every text at a point of its own: a vector branch that separates the candidates."""

    model_name = "scattered-8"

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.array(
            [[random.Random(t).uniform(-1, 1) for _ in range(8)] for t in texts], dtype=np.float32
        )


@pytest.mark.parametrize(("embedder", "reorders"), [(NearlyConstant(), False), (Scattered(), True)])
def test_a_near_constant_signal_does_not_reorder(
    make_manager: Callable[..., MemoryManager], clock: Clock, embedder: Embedder, reorders: bool
) -> None:
    """A vector branch that tells the candidates apart by almost nothing leaves the lexical order
    as it is; one that separates them counts."""
    manager = make_manager(embedder.model_name, embedder=embedder)
    texts = [
        "Bob: the garden party had a cake and music",
        "Alice: the garden was full of rain",
        "Bob: a cake for the birthday party",
        "Alice: music at the party all night",
        "Bob: we planted the garden in spring",
        *chatter(30, seed=31),
    ]
    add_chat(manager, clock, texts, [f"s{i // 5}" for i in range(len(texts))])
    manager.wait_for_embeddings()  # a model's vectors are queued (PGMEM_EMBED=auto)
    question = "What happened at the garden party with the cake?"
    lexical = [m.id for m in manager.retrieve_memories(question, limit=8, scoring="lexical")]
    hybrid = [m.id for m in manager.retrieve_memories(question, limit=8)]
    assert (hybrid != lexical) == reorders


def test_every_scoring_mode_can_be_chosen_and_a_bad_one_is_refused(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    manager = make_manager()
    manager.add_memories(["Python is my favourite language", "I walked the dog"], "episodic")
    for mode in ("hybrid", "lexical", "vector", "reference"):
        found = manager.retrieve_memories("favourite programming language python", scoring=mode)
        assert found[0].content.startswith("Python"), mode
    lexical = manager.retrieve_memories("favourite language", scoring="lexical")
    assert [m.content for m in lexical] == ["Python is my favourite language"]  # no vector candidates
    rrf = make_manager(config=MemoryConfig(fusion="rrf")).retrieve_memories("python language")
    assert rrf[0].content.startswith("Python")
    before = row_counts(clean)
    with pytest.raises(InvalidInputError, match="scoring"):
        manager.retrieve_memories("python", scoring="bm25")
    assert row_counts(clean) == before


def test_one_search_ranks_every_long_term_type_together(
    make_manager: Callable[..., MemoryManager],
) -> None:
    manager = make_manager(enable_perceptual=True)
    episode = manager.add_memory("We argued about the Rust borrow checker at lunch", "episodic")
    fact = manager.add_memory("Carol is a Rust compiler engineer", "semantic")
    manager.add_memory("a photo of a red bicycle", "perceptual", metadata={"modality": "text"})
    found = manager.retrieve_memories("Rust compiler", memory_types=["episodic", "semantic", "perceptual"])
    assert [m.id for m in found[:2]] == [fact, episode]
    assert found[0].score is not None and found[1].score is not None and found[0].score > found[1].score
    capped = manager.retrieve_memories(
        "Rust", memory_types=["episodic", "semantic"], per_type_limit=1, limit=5
    )
    assert sorted(m.memory_type for m in capped) == ["episodic", "semantic"]


def test_event_times_are_checked_and_kept(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    manager = make_manager()
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    memory_id = manager.add_memory("Caroline went to a support group", "episodic", timestamp=when.isoformat())
    stored = manager.get_memory(memory_id)
    assert stored is not None and stored.timestamp == when
    before = row_counts(clean)
    bad: list[tuple[dict[str, object], str]] = [
        ({"timestamp": datetime(2023, 5, 8)}, "timestamp"),  # no time zone
        ({"timestamp": "last Tuesday"}, "timestamp"),
        ({"timestamp": when, "memory_type": "working"}, "timestamp"),
    ]
    for options, field in bad:
        with pytest.raises(InvalidInputError, match=field):
            manager.add_memory("x", **{"memory_type": "episodic", **options})  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="timestamps"):
        manager.add_memories(["a", "b"], "episodic", timestamps=[when])
    assert row_counts(clean) == before


def test_vector_scoring_is_cosine_order_with_type_caps(
    make_manager: Callable[..., MemoryManager], embedder: HashingEmbedder
) -> None:
    """scoring="vector" (its own lean statement) ranks by cosine similarity, full k, caps per type."""
    manager = make_manager()
    texts = chatter(60, seed=3)
    manager.add_memories(texts[:40], "episodic", importance=0.5)
    manager.add_memories(texts[40:], "semantic", importance=0.5)
    query = "a guitar and a cake with my team on the beach"
    found = manager.retrieve_memories(
        query, memory_types=["episodic", "semantic"], limit=10, scoring="vector"
    )
    vectors = embedder.encode_documents(texts)
    cosine = vectors @ embedder.encode_query(query)
    best = sorted(range(len(texts)), key=lambda i: -cosine[i])[:10]
    assert len(found) == 10
    assert [m.content for m in found][:5] == [texts[i] for i in best][:5]  # ties below may swap
    assert found[0].components["vector_score"] == 1.0 and found[0].components["text_score"] == 0.0
    capped = manager.retrieve_memories(
        query, memory_types=["episodic", "semantic"], limit=10, per_type_limit=2, scoring="vector"
    )
    assert len(capped) == 4 and sorted(m.memory_type for m in capped) == ["episodic"] * 2 + ["semantic"] * 2


def test_a_session_imported_with_one_time_ranks_as_with_a_time_per_turn(
    make_manager: Callable[..., MemoryManager], clock: Clock
) -> None:
    """A chat log imported with its sessions' dates only (every turn of a session at one time)
    ranks as the same log with a time per turn: a memory's neighbours are the turns added next
    to it, whatever the clock says."""
    sessions = []
    for s in range(6):
        turns = chatter(12, seed=100 + s)
        turns[5] = f"Alice: we finally adopted the puppy from the shelter on trip {s}"
        turns[6] = "Bob: so what did you name it?"
        turns[7] = f"Alice: Biscuit number {s}, like the little cookie"
        sessions.append(turns)
    start = clock() - timedelta(days=60)
    by_turn, by_session = make_manager("per_turn"), make_manager("per_session")
    for s, turns in enumerate(sessions):
        day = start + timedelta(days=s)
        session = [f"s{s}"] * len(turns)
        by_turn.add_memories(
            turns,
            "episodic",
            session_ids=session,
            timestamps=[day + timedelta(seconds=i) for i in range(len(turns))],
        )
        by_session.add_memories(turns, "episodic", session_ids=session, timestamps=[day] * len(turns))
    for question in (
        "What did Alice name the puppy she adopted?",
        "the shelter puppy's name",
        "little cookie",
    ):
        ranked = [
            [m.content for m in manager.retrieve_memories(question, limit=10, track_access=False)]
            for manager in (by_turn, by_session)
        ]
        assert ranked[0] == ranked[1], question
    [first, *_] = by_session.retrieve_memories("What did Alice name the puppy she adopted?", limit=10)
    assert "Biscuit" in first.content or "puppy" in first.content
