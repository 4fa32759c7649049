"""Both benchmarks' users as the twin (bench/twin.py) takes them, and the measures of a ranking of
their questions: what bench/cross_validate.py and bench/ranking_trials.py share.

Every memory a user of either benchmark would store: LoCoMo's five development conversations (every
turn, as bench/retrieval.py adds them) and LongMemEval's 123 answerable development questions (every
user turn, as bench/longmemeval.py adds them; long turns in parts). Each question is asked as
retrieve_memories asks it: the text without what it sets aside, the names it gives, the time it
names. Lexemes come from PostgreSQL's parser (a fresh database), vectors from the embedder; both are
cached under ~/.cache/hello-pgmem/ (the data is never written into this repository).

Folds: five, each one LoCoMo conversation and every fifth LongMemEval question (by question id).
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench import datasets, harness, twin
from hello_pgmem import Database
from hello_pgmem.embedding import Embedder
from hello_pgmem.graph.normalize import name_candidates
from hello_pgmem.memory._classify import estimate_importance
from hello_pgmem.memory._counting import asks_for_a_count
from hello_pgmem.memory._exclusions import without_exclusions
from hello_pgmem.memory._when import time_range
from hello_pgmem.rag.splitting import split_text

CACHE = Path.home() / ".cache" / "hello-pgmem"
FOLDS = 5
MEASURES = ("LoCoMo R@10", "multi-hop", "LME session all@5", "LME turn all@10")
OBJECTIVE = ("LoCoMo R@10", "LME session all@5", "LME turn all@10")


@dataclass
class Asked:
    """One question as retrieve_memories would ask it."""

    query: twin.Query
    count: bool
    evidence: set[str]
    category: Any
    evidence_sessions: set[str] = field(default_factory=set)


@dataclass
class User:
    memories: twin.Memories
    turn_ids: list[str]  # each memory's turn (a part of a long turn: its turn)
    questions: list[Asked]
    benchmark: str
    fold: int


def memories_of(
    embedder: Embedder,
    db: Database,
    texts: list[str],
    sessions: list[str],
    when: list[datetime],
    speakers: list[str | None],
) -> twin.Memories:
    vectors = np.asarray(embedder.encode_documents(texts), dtype=float)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12
    return twin.Memories(
        ids=[f"{i:08d}" for i in range(len(texts))],
        sessions=list(sessions),
        created=np.array([w.timestamp() for w in when]),
        terms=[dict(c) for c in datasets.lexemes(db, texts)],
        vectors=vectors,
        speakers=list(speakers),
        importance=np.array(
            [
                estimate_importance(t, {"speaker": s} if s else None)
                for t, s in zip(texts, speakers, strict=True)
            ]
        ),
    )


def asked(embedder: Embedder, db: Database, text: str, now: datetime, **fields: Any) -> Asked:
    ranked = without_exclusions(text)
    with db.connection() as conn:
        row = conn.execute("SELECT query_terms(%s)", (ranked,)).fetchone()
    vector = np.asarray(embedder.encode_queries([ranked])[0], dtype=float)
    named = time_range(text, now)
    query = twin.Query(
        terms=list(row[0]) if row else [],
        vector=vector / (np.linalg.norm(vector) + 1e-12),
        names=frozenset(n.lower() for n in name_candidates(ranked) or ()),
        time_from=named[0].timestamp() if named else None,
        time_to=named[1].timestamp() if named and named[1] else None,
        now=now.timestamp(),
    )
    return Asked(query, asks_for_a_count(ranked), **fields)


def prepare(name: str) -> list[User]:
    """Both benchmarks' users for one embedder, from the cache or made (vectors through
    datasets.make_embedder's cache, lexemes by PostgreSQL)."""
    path = CACHE / f"cross-validate-{name}.pkl"
    if path.exists():  # plain values and the twin's classes, whichever script reads them
        return [
            User(memories, turns, [Asked(**q) for q in questions], benchmark, fold)
            for memories, turns, questions, benchmark, fold in pickle.loads(path.read_bytes())
        ]
    embedder = datasets.make_embedder(name)
    now = datetime.now(UTC)
    users = []
    with harness.fresh_database() as settings, Database(settings) as db:
        chats = datasets.load_locomo(Path(os.environ.get("PGMEM_LOCOMO", datasets.LOCOMO_DATA)))
        for fold, chat in enumerate(chats):
            memories = memories_of(
                embedder,
                db,
                [t.text for t in chat.turns],
                [t.session for t in chat.turns],
                [t.when for t in chat.turns],
                [t.speaker for t in chat.turns],
            )
            questions = [
                asked(embedder, db, q.text, now, evidence=set(q.evidence), category=q.category)
                for q in chat.questions
            ]
            users.append(User(memories, [t.dia_id for t in chat.turns], questions, "locomo", fold % FOLDS))
        instances = datasets.load_longmemeval(
            Path(os.environ.get("PGMEM_LONGMEMEVAL", datasets.LONGMEMEVAL_DATA))
        )
        for instance in instances:
            texts, sessions, when, turns = [], [], [], []
            for key in instance.keys:  # a turn over the content cap is stored in parts
                pieces = (
                    split_text(key.text, datasets.MAX_CHARS, len)
                    if len(key.text) > datasets.MAX_CHARS
                    else [key.text]
                )
                for piece in pieces:
                    texts.append(piece)
                    sessions.append(key.session_id)
                    when.append(key.session_date)
                    turns.append(key.turn_id)
            memories = memories_of(embedder, db, texts, sessions, when, [None] * len(texts))
            question = asked(
                embedder,
                db,
                instance.question,
                instance.asked_at,
                evidence=set(instance.evidence_turns),
                category=instance.question_type,
                evidence_sessions=set(instance.evidence_sessions),
            )
            fold = sorted(i.question_id for i in instances).index(instance.question_id) % FOLDS
            users.append(User(memories, turns, [question], "longmemeval", fold))
    CACHE.mkdir(parents=True, exist_ok=True)
    plain = [(u.memories, u.turn_ids, [vars(q) for q in u.questions], u.benchmark, u.fold) for u in users]
    path.write_bytes(pickle.dumps(plain))
    return users


def answers(
    users: list[User], weights: twin.Weights, fusion: twin.Fusion, count_rule: bool = True
) -> list[dict[str, Any]]:
    """Each question's measures under ``weights``: LoCoMo recall@10, LongMemEval's session
    recall_all@5 and turn recall_all@10. ``count_rule`` False: a question that asks for a count is
    ranked as any other."""
    rows = []
    for user in users:
        for question in user.questions:
            counted = count_rule and fusion == "spread" and question.count
            chosen: twin.Fusion = "minmax" if counted else fusion
            ranked = twin.rank(user.memories, question.query, chosen, "hybrid", weights, limit=50)
            turns = list(dict.fromkeys(user.turn_ids[i] for i in ranked.order[:50]))
            if user.benchmark == "locomo":
                top = set(turns[:10])
                recall = len(question.evidence & top) / len(question.evidence)
                row = {"LoCoMo R@10": recall}
                if question.category == 1:
                    row["multi-hop"] = recall
            else:
                sessions = datasets.sessions_of(turns)
                total = len(set(user.memories.sessions))
                row = {
                    "LME session all@5": datasets.measures(sessions, question.evidence_sessions, total, 5)[0]
                }
                if question.evidence:
                    row["LME turn all@10"] = datasets.measures(turns, question.evidence, user.memories.n, 10)[
                        0
                    ]
            rows.append({"fold": user.fold, **row})
    return rows


def summary(rows: list[dict[str, Any]], folds: set[int]) -> dict[str, float]:
    """Each measure's mean (in %) over the questions of ``folds``."""
    out = {}
    for measure in MEASURES:
        values = [r[measure] for r in rows if r["fold"] in folds and measure in r]
        out[measure] = 100 * float(np.mean(values)) if values else float("nan")
    return out
