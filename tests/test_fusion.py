"""What the hybrid ranking makes of its signals: a question embedded as a query finds memories
embedded as documents; each signal counts by its spread over the candidates, not its level."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
import pytest

from hello_pgmem import MemoryConfig, MemoryManager
from hello_pgmem.core.models import Fusion
from hello_pgmem.embedding import Embedder, OpenAIEmbedder
from tests.fake_openai import FakeOpenAI, fake_vector, serve

TOPICS = {"harbour": 0, "ferry": 0, "boats": 0, "violin": 1, "music": 1, "mountain": 2, "hiking": 2}
DIMENSION = 8


def asymmetric_model(text: str) -> list[float]:
    """A retrieval model that only works as it was trained: "passage: " before what is stored,
    "query: " before a question, each side with words of its own. Any other text gets noise."""
    for prefix in ("passage: ", "query: "):
        if text.startswith(prefix):
            vector = np.zeros(DIMENSION)
            for word in text.removeprefix(prefix).lower().replace("?", " ").split():
                if word in TOPICS:
                    vector[TOPICS[word]] += 1.0
            vector += 0.05 * np.asarray(fake_vector(text, DIMENSION))
            return [float(x) for x in vector]
    return fake_vector(text, DIMENSION)


def test_a_question_embedded_as_a_query_finds_what_was_embedded_as_a_document(
    make_manager: Callable[..., MemoryManager],
) -> None:
    with serve(FakeOpenAI(dimension=DIMENSION, embed=asymmetric_model)) as fake:
        e5 = OpenAIEmbedder("intfloat/e5-small-v2", base_url=fake.base_url, dimension=DIMENSION)
        memory = make_manager("ruth", embedder=e5)
        memory.add_memories(
            ["The ferry leaves the harbour at six", "She practises the violin every evening"], "episodic"
        )
        memory.add_memory("We walked up the mountain on Sunday", "episodic")
        for scoring in ("vector", "hybrid"):
            [best, *_] = memory.retrieve_memories(
                "when do the boats depart?", scoring=scoring, track_access=False
            )
            assert best.content == "The ferry leaves the harbour at six", scoring
        sent = fake.embedded_texts()
        assert "passage: We walked up the mountain on Sunday" in sent
        assert sent.count("query: when do the boats depart?") == 1  # the second search's from the cache
        assert not [t for t in sent if not t.startswith(("passage: ", "query: "))]


def test_a_session_about_the_question_outranks_scattered_mentions(
    make_manager: Callable[..., MemoryManager],
) -> None:
    """Sessions rank as whole documents: a long conversation about the kitchen and, later, its
    renovation comes before sessions that name both once in one turn (no five turns of the long
    one hold both words: ranked by their best memory, the short ones came first)."""
    memory = make_manager("sam")
    about = [
        "The kitchen floor is cold in the morning",
        "We want a bigger kitchen table",
        "The kitchen window faces the garden",
        "Light in the kitchen matters to us",
        "Then we talked about money for a while",
        "The bank said yes to the loan",
        "We compared three offers",
        "We signed on Friday",
        "The renovation starts in March",
        "The renovation takes six weeks",
        "During the renovation we stay with Ana",
        "After the renovation we throw a party",
    ]
    memory.add_memories(about, "episodic", session_ids=["renovation"] * len(about))
    for n, topic in enumerate(("a concert", "the ferry", "tax forms", "a birthday")):
        turns = [
            f"We talked about {topic}",
            "The kitchen renovation, someone asked",
            "Then lunch",
        ]
        memory.add_memories(turns, "episodic", session_ids=[f"other-{n}"] * len(turns))
    [best, *rest] = memory.retrieve_sessions("How is the kitchen renovation going?", limit=3)
    assert best.session_id == "renovation" and rest
    assert [m.content for m in best.memories] == about, "the session comes whole, in order"
    assert best.hits and all(h.session_id == "renovation" for h in best.hits)


class Compressed(Embedder):
    """A model of meaning whose cosines all lie between 0.80 and 0.88, as E5's do: each stored
    text at the cosine ``SIMILAR`` gives it to the question, every other text at 0.80."""

    model_name = "compressed-16"
    dimension = 16
    SIMILAR: ClassVar[dict[str, float]] = {}

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            similarity = self.SIMILAR.get(text)
            if similarity is None:  # the question
                rows.append(np.eye(self.dimension)[0])
                continue
            other = np.zeros(self.dimension)
            other[1 + random.Random(text).randrange(self.dimension - 1)] = 1.0
            rows.append(similarity * np.eye(self.dimension)[0] + np.sqrt(1 - similarity**2) * other)
        return np.asarray(rows, dtype=np.float32)


UNRELATED = {f"A note about the weather on day {n}": 0.80 for n in range(8)}
"""Memories as far from every question as the farthest of the others, to spread the cosines."""


def test_a_compressed_but_discriminating_signal_counts(make_manager: Callable[..., MemoryManager]) -> None:
    """Cosines from 0.80 to 0.88 that tell the memories apart reorder the lexical ranking: spread
    over the candidates, they count as much as a wide one would; over the best alone, at the same
    weight, they do not."""
    closest = "The garden party had music, food and friends from the whole street"
    plain = "The garden party"
    Compressed.SIMILAR = {closest: 0.88, plain: 0.80} | UNRELATED
    memory = make_manager("cora", embedder=Compressed(), config=MemoryConfig(vector_weight=1.0))
    memory.add_memories([plain, closest, *UNRELATED], "episodic")
    question = "How was the garden party?"
    lexical = memory.retrieve_memories(question, limit=2, scoring="lexical", track_access=False)
    hybrid = memory.retrieve_memories(question, limit=2, track_access=False)
    assert lexical[0].content == plain, "the shorter text matches the terms best"
    assert hybrid[0].content == closest
    weighted = make_manager(
        "cora", embedder=Compressed(), config=MemoryConfig(fusion="weighted", vector_weight=1.0)
    )
    assert weighted.retrieve_memories(question, limit=1, track_access=False)[0].content == plain, (
        "weighed by the best cosine alone, 0.80 against 0.88 is too little to count"
    )


def test_an_answer_without_the_questions_words_counts_the_turn_before_it(
    make_manager: Callable[..., MemoryManager],
) -> None:
    """A memory found by its vector alone has a context too: the answer right after the turn that
    asked the question outranks a memory as near by vector that sits among unrelated turns."""
    asked = "Mia, where did you go for the holidays?"
    answer = "We drove up to the lakes in Finland"
    elsewhere = "We drove to the lakes for a weekend"
    Compressed.SIMILAR = {asked: 0.80, answer: 0.88, elsewhere: 0.885, "We fixed the fence": 0.80}
    Compressed.SIMILAR |= UNRELATED
    memory = make_manager("mia", embedder=Compressed(), config=MemoryConfig(fusion="minmax"))
    memory.add_memories([asked, answer], "episodic", session_ids=["holidays"] * 2)
    memory.add_memories(["We fixed the fence", elsewhere], "episodic", session_ids=["garden"] * 2)
    memory.add_memories(list(Compressed.SIMILAR)[4:], "episodic")
    found = memory.retrieve_memories("Where did Mia go for the holidays?", limit=4, track_access=False)
    order = [m.content for m in found]
    assert order.index(answer) < order.index(elsewhere), order
    [by_answer] = [m for m in found if m.content == answer]
    assert by_answer.components["text_score"] == 0 and by_answer.components["context_score"] > 0


def test_each_fusion_weighs_a_memorys_own_cosine_whatever_its_neighbours(
    make_manager: Callable[..., MemoryManager],
) -> None:
    """A memory's cosine is its own, in ``spread`` as in ``minmax``: a nearer turn among unrelated
    ones comes before a turn among turns about the question (the context window's cosines did not
    hold over held-out folds: docs/search.md)."""
    inside = "The jib tore in the gust"
    stray = "The regatta results came in"
    Compressed.SIMILAR = {"We rigged the mainsheet": 0.85, inside: 0.86, "We reefed before the squall": 0.85}
    Compressed.SIMILAR |= {"The printer jammed again": 0.80, stray: 0.87, "Lunch was cold": 0.80}
    Compressed.SIMILAR |= UNRELATED
    texts = list(Compressed.SIMILAR)
    question = "Tell me about sailing"
    ranked_by: tuple[tuple[Fusion, str], ...] = (("spread", stray), ("minmax", stray))
    for fusion, first in ranked_by:
        memory = make_manager(f"ines-{fusion}", embedder=Compressed(), config=MemoryConfig(fusion=fusion))
        memory.add_memories(texts[:3], "episodic", session_ids=["boat"] * 3)
        memory.add_memories(texts[3:6], "episodic", session_ids=["office"] * 3)
        memory.add_memories(texts[6:], "episodic")
        [best] = memory.retrieve_memories(question, limit=1, track_access=False)
        assert best.content == first, fusion


def test_a_reranker_reorders_the_first_stage_when_one_is_configured(
    make_manager: Callable[..., MemoryManager], settings: Any
) -> None:
    """With RERANK_BASE_URL, the best 50 of the hybrid search go to the server's /rerank (Cohere's
    format) and come back in its order; without it, no request is made."""
    from hello_pgmem import Store

    def relevance(query: str, document: str) -> float:
        return 1.0 if "sourdough" in document else 0.5 - document.count("bread") / 100

    notes = [f"I bought bread number {n} at the bakery, bread again" for n in range(12)]
    notes.append("My sourdough starter finally rose")
    with serve(FakeOpenAI(rerank=relevance)) as fake:
        plain = make_manager("bea")
        plain.add_memories(notes, "episodic")
        first_stage = plain.retrieve_memories("bread", limit=3, track_access=False)
        assert "sourdough" not in first_stage[0].content and not fake.requests
        with Store(
            settings=settings.model_copy(
                update={"rerank_base_url": fake.base_url, "rerank_model": "rerank-small"}
            ),
            embedder=plain.embedder,
        ) as store:
            reranked = store.memory("bea", types=["episodic"]).retrieve_memories(
                "bread", limit=3, track_access=False
            )
        [request] = [r for r in fake.requests if r["path"].endswith("/rerank")]
        assert request["body"]["model"] == "rerank-small" and request["body"]["query"] == "bread"
        assert len(request["body"]["documents"]) == len(notes)  # every candidate, up to RERANK_TOP_N
        assert reranked[0].content == "My sourdough starter finally rose"
        assert reranked[0].components["rerank_score"] == 1.0 and len(reranked) == 3


def test_what_a_question_sets_aside_does_not_fill_its_top(
    make_manager: Callable[..., MemoryManager],
) -> None:
    """A question's "besides pottery" or "除了陶艺" is taken out of what the search ranks by: the
    other creative projects come first, not every memory about pottery."""
    memory = make_manager("mel")
    memory.add_memories(
        [
            "Mel and her kids did pottery together at the studio on Saturday",
            "Mel and her kids glazed the pottery together, then fired the pottery",
            "Mel and her kids painted together",
            "梅尔和孩子们一起做陶艺，在工作室烧了陶艺碗",
            "梅尔和孩子们一起画画",
        ],
        "episodic",
    )
    [best, *_] = memory.retrieve_memories(
        "What creative project do Mel and her kids do together besides pottery?", track_access=False
    )
    assert best.content == "Mel and her kids painted together"
    [best, *_] = memory.retrieve_memories("除了陶艺，梅尔和孩子们一起做什么？", track_access=False)
    assert best.content == "梅尔和孩子们一起画画"


def test_a_count_question_ranks_the_instances_a_model_of_meaning_finds(
    make_manager: Callable[..., MemoryManager],
) -> None:
    """A count ("How many fitness classes…") is answered by memories that name each class (Zumba,
    spin), not the question's words: a count puts the vector on its spread at full weight, so the
    instances come first; the same words without a count keep the lexical mentions first."""
    instances = ["Zumba with Carla on Tuesday evening", "Spin at seven on Thursday", "我周六上瑜伽"]
    mentions = [
        "The fitness centre printed a new schedule of classes",
        "I read an article about fitness classes for beginners",
        "Classes at the fitness centre are always full",
    ]
    Compressed.SIMILAR = dict.fromkeys(instances, 0.88) | dict.fromkeys(mentions, 0.80)
    Compressed.SIMILAR |= UNRELATED
    memory = make_manager("nina", embedder=Compressed())
    memory.add_memories([*mentions, *instances, *list(Compressed.SIMILAR)[6:]], "episodic")
    for question in (
        "How many fitness classes do I attend each week?",
        "我每周上几节健身课？fitness classes",
    ):
        found = memory.retrieve_memories(question, limit=3, track_access=False)
        assert {m.content for m in found} == set(instances), question
    [first] = memory.retrieve_memories("Which fitness classes do I attend?", limit=1, track_access=False)
    assert first.content in mentions


def test_a_reranker_that_keeps_failing_is_tried_three_times_then_named_in_the_error() -> None:
    from hello_pgmem.core.errors import LLMError
    from hello_pgmem.llm.rerank import Reranker

    with serve(FakeOpenAI()) as fake:  # no /rerank: every request is a 404
        reranker = Reranker(fake.base_url, max_retries=2)
        with pytest.raises(LLMError, match=r"the reranker at .*/rerank failed"):
            reranker.rerank("bread", ["sourdough", "rye"])
        assert len([r for r in fake.requests if r["path"].endswith("/rerank")]) == 3
