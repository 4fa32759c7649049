"""One ranking, two implementations held equal: search_memories in the database and bench/twin.py in
NumPy rank the same memories alike, for every fusion and mode, and a weight changed in one of them
alone tells them apart.

Two users: one with 120 memories, whose every match is a candidate and whose term frequencies are
counted among them; one with 260, where a speaker's name is a common term (in every memory), so the
candidates come from rarer terms, or, when every term is common, from the first 200 windows of the
table that hold them all, of which the 80 best by their own BM25 are kept (lexical_pool). Speakers, sessions, importances, a time range and a question that names a speaker
exercise every component but the graph's."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from bench import twin
from hello_pgmem import Database, HashingEmbedder
from hello_pgmem.memory import MemoryManager

NOW = datetime(2026, 3, 1, tzinfo=UTC)
START = NOW - timedelta(days=200)
TOPICS = [
    "hiking in the Alps with a heavy backpack",
    "a cello lesson about bowing and vibrato",
    "the harbour market selling fresh fish",
    "cooking a Thai curry with lemongrass",
    "repairing the garden fence after the storm",
    "a ferry trip to the island lighthouse",
    "buying running shoes for the marathon",
    "a book club reading a Russian novel",
    "planting tomatoes and basil on the balcony",
    "a job interview at the design studio",
    "the kitchen tap that keeps dripping",
    "a birthday party with a chocolate cake",
]
ASIDES = ["it rained all day", "we laughed a lot", "the weather was fine", "nothing else happened", ""]
SPEAKERS = ["Anna", "Ben", "Chloe"]
QUESTIONS = [
    ("what did Ben say about the cello lesson", None),
    ("hiking Alps backpack", None),
    ("when was the ferry trip to the lighthouse", None),
    ("Anna", None),  # the second user's: every term common
    ("Anna tomatoes balcony", None),
    ("chocolate cake party last month", (NOW - timedelta(days=40), NOW - timedelta(days=10))),
    ("something completely unrelated zebra", None),
]
CASES = [
    ("hybrid", "weighted"),
    ("hybrid", "spread"),
    ("hybrid", "minmax"),
    ("hybrid", "rrf"),
    ("lexical", "weighted"),
    ("vector", "weighted"),
]


def text(i: int) -> str:
    speaker = SPEAKERS[i % 3]
    topic = TOPICS[(i * 5) % len(TOPICS)]
    aside = ASIDES[(i * 7) % len(ASIDES)]
    extra = "Anna " if i % 3 else ""  # in the larger user every memory names Anna
    return f"{speaker}: {extra}{topic}, {aside} (note {i % 17})"


def fill(db: Database, user: str, count: int, everyone_names_anna: bool) -> None:
    memory = MemoryManager.of_types(user, ["episodic"], database=db, embedder=HashingEmbedder())
    contents = [text(i) if everyone_names_anna else text(i).replace("Anna ", "") for i in range(count)]
    if everyone_names_anna:
        contents = [c if "Anna" in c else c.replace(": ", ": Anna ", 1) for c in contents]
    memory.add_memories(
        contents,
        importance=[round(0.1 + 0.8 * ((i * 37) % 100) / 100, 2) for i in range(count)],
        metadata=[{"speaker": SPEAKERS[i % 3]} for i in range(count)],
        timestamps=[START + timedelta(days=i * 190 / count, minutes=i % 7) for i in range(count)],
        session_ids=[f"s{i // 10}" if i % 11 else None for i in range(count)],
    )


@pytest.fixture(scope="module")
def db(test_server: Any, new_database: Callable[[], str]) -> Iterator[Database]:
    """A database of this module's own: its users stay for every test."""
    settings = test_server.settings(new_database())
    test_server.migrate(settings)
    with Database(settings) as database:
        yield database


@pytest.fixture(scope="module")
def users(db: Database) -> dict[str, twin.Memories]:
    with db.connection() as conn:
        row = conn.execute("SELECT ranking_weight('common')").fetchone()
    assert row is not None and 120 <= row[0] < 260, "the small user's terms are all rare, the large one's not"
    fill(db, "twin_small", 120, everyone_names_anna=False)
    fill(db, "twin_large", 260, everyone_names_anna=True)
    return {user: loaded(db, user) for user in ("twin_small", "twin_large")}


def loaded(db: Database, user: str) -> twin.Memories:
    """A user's memories as the twin holds them, read back from the database."""
    with db.transaction(user) as conn:
        rows = conn.execute(
            """SELECT m.id::text, m.session_id, extract(epoch FROM m.created_at)::float8,
                      (SELECT jsonb_object_agg(u.lexeme, coalesce(array_length(u.positions, 1), 1))
                       FROM unnest(m.lexemes) AS u),
                      m.embedding::text, m.metadata ->> 'speaker', m.importance, m.term_count, m.seq
               FROM memories m WHERE m.user_id = %s ORDER BY m.seq""",
            (user,),
        ).fetchall()
        places = conn.execute(  # the windows' order in the table: what a scan that stops early returns first
            """SELECT m.seq FROM memory_contexts c JOIN memories m ON m.user_id = c.user_id AND m.id = c.memory_id
               WHERE c.user_id = %s ORDER BY c.ctid""",
            (user,),
        ).fetchall()
    index = {r[8]: i for i, r in enumerate(rows)}  # a memory's index by its seq
    stored = np.argsort([index[p[0]] for p in places])  # each memory's place in the table
    vectors = np.array([json.loads(r[4]) for r in rows], dtype=float)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    memories = twin.Memories(
        ids=[r[0] for r in rows],
        sessions=[r[1] for r in rows],
        created=np.array([r[2] for r in rows]),
        terms=[dict(r[3] or {}) for r in rows],
        vectors=vectors,
        speakers=[r[5] for r in rows],
        importance=np.array([r[6] for r in rows]),
        stored=stored,
    )
    assert list(memories.length) == [r[7] for r in rows], "the twin's lengths are term_count"
    return memories


def sql_ranking(
    db: Database,
    user: str,
    question: str,
    limit: int,
    mode: str,
    fusion: str,
    weight: float | None = None,
    time_range: tuple[datetime, datetime] | None = None,
) -> list[tuple[str, float]]:
    embedder = HashingEmbedder()
    names = [n.lower() for n in SPEAKERS if n.lower() in question.lower()]
    with db.transaction(user) as conn:
        rows = conn.execute(
            """SELECT id::text, score FROM search_memories(
                   %(user)s, %(model)s, %(vector)s::vector, %(text)s, %(limit)s, memory_filter(ARRAY['episodic']),
                   p_now => %(now)s, p_names => %(names)s, p_time_from => %(from)s, p_time_to => %(to)s,
                   p_mode => %(mode)s, p_fusion => %(fusion)s, p_vector_weight => %(weight)s)""",
            {
                "user": user,
                "model": embedder.model_name,
                "vector": str(list(map(float, embedder.encode_queries([question])[0]))),
                "text": question,
                "limit": limit,
                "now": NOW,
                "names": names,
                "from": time_range[0] if time_range else None,
                "to": time_range[1] if time_range else None,
                "mode": mode,
                "fusion": fusion,
                "weight": weight,
            },
        ).fetchall()
    return [(r[0], float(r[1])) for r in rows]


def twin_ranking(
    db: Database,
    memories: twin.Memories,
    question: str,
    limit: int,
    mode: str,
    fusion: str,
    weights: twin.Weights = twin.WEIGHTS,
    time_range: tuple[datetime, datetime] | None = None,
) -> list[tuple[str, float]]:
    embedder = HashingEmbedder()
    with db.connection() as conn:
        row = conn.execute("SELECT query_terms(%s)", (question,)).fetchone()
    assert row is not None
    vector = np.asarray(embedder.encode_queries([question])[0], dtype=float)
    query = twin.Query(
        terms=list(row[0]),
        vector=vector / np.linalg.norm(vector),
        names=frozenset(n.lower() for n in SPEAKERS if n.lower() in question.lower()),
        time_from=time_range[0].timestamp() if time_range else None,
        time_to=time_range[1].timestamp() if time_range else None,
        now=NOW.timestamp(),
    )
    ranked = twin.rank(memories, query, fusion, mode, weights, limit=limit)  # type: ignore[arg-type]
    return [(memories.ids[i], float(ranked.score[i])) for i in ranked.order[:limit]]


def same(sql: list[tuple[str, float]], numpy: list[tuple[str, float]], tolerance: float = 1e-5) -> bool:
    """The same memories in the same order with the same scores, but for float noise: two memories
    whose scores differ by less than ``tolerance`` may come in either order."""
    if len(sql) != len(numpy) or any(abs(a[1] - b[1]) > tolerance for a, b in zip(sql, numpy, strict=True)):
        return False
    return all(
        a[0] == b[0] or (abs(a[1] - b[1]) <= tolerance and {a[0], b[0]} <= {x[0] for x in numpy})
        for a, b in zip(sql, numpy, strict=True)
    )


@pytest.mark.parametrize(("mode", "fusion"), CASES)
def test_the_twin_ranks_as_the_database_does(
    db: Database, users: dict[str, twin.Memories], mode: str, fusion: str
) -> None:
    for user, memories in users.items():
        for question, time_range in QUESTIONS:
            for limit in (10, 45):
                sql = sql_ranking(db, user, question, limit, mode, fusion, time_range=time_range)
                numpy = twin_ranking(db, memories, question, limit, mode, fusion, time_range=time_range)
                assert same(sql, numpy), (user, question, limit, sql[:5], numpy[:5])


@pytest.mark.parametrize(
    "changed",
    [
        {"own": 0.5},
        {"context": 0.5},
        {"vector_spread": 0.6},
        {"k1": 1.3},
        {"spread_floor": 0.2},
        {"lexical_pool": 0},
    ],
)
def test_a_weight_changed_in_the_twin_alone_tells_them_apart(
    db: Database, users: dict[str, twin.Memories], changed: dict[str, Any]
) -> None:
    weights = replace(twin.Weights(), **changed)
    differs = False
    for user, memories in users.items():
        for question, time_range in QUESTIONS:
            sql = sql_ranking(db, user, question, 45, "hybrid", "spread", time_range=time_range)
            numpy = twin_ranking(db, memories, question, 45, "hybrid", "spread", weights, time_range)
            differs = differs or not same(sql, numpy)
    assert differs


def test_a_weight_changed_in_the_database_alone_tells_them_apart(
    db: Database, users: dict[str, twin.Memories]
) -> None:
    """The vector's weight given to the SQL alone (the one weight a caller may change)."""
    question = QUESTIONS[0][0]
    sql = sql_ranking(db, "twin_small", question, 45, "hybrid", "spread", weight=0.9)
    numpy = twin_ranking(db, users["twin_small"], question, 45, "hybrid", "spread")
    assert not same(sql, numpy)


TWIN_LEAVES_OUT = {
    "graph_decay", "specific_share", "specific_least",  # the graph's expansion (semantic memories)
    "narrowed",  # how the index looks common terms up: the same rows either way
    "exact_scan",  # the twin reads every user exactly
    "session_vector", "session_common",  # search_sessions
    "chunk_vector", "chunk_pool", "chunk_common", "chunk_heading",  # search_chunks
}  # fmt: skip
"""The weights of ranking_weights() that rank what the twin does not: filters, graphs, sessions,
chunks."""


def test_the_twins_weights_are_ranking_weights_by_name(database: Database) -> None:
    """Every weight of the twin is ranking_weights()' of the same name and value, and every weight
    of search_memories' ranking is the twin's."""
    with database.connection() as conn:
        sql_weights = dict(conn.execute("SELECT name, value FROM ranking_weights()").fetchall())
    twins = {name: value for name, value in vars(twin.WEIGHTS).items() if name not in twin.TRIALS_ONLY}
    assert set(twins) | TWIN_LEAVES_OUT == set(sql_weights)
    assert {name: float(value) for name, value in twins.items()} == {name: sql_weights[name] for name in twins}
