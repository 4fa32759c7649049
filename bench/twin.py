"""search_memories in NumPy: the same candidates, components, normalisations and weights as the
SQL (sql/search.sql, sql/ranking.sql), for one user's memories held in memory.

The SQL is the product; this twin is where rankings are explored (bench/ranking_trials.py,
bench/cross_validate.py): a variant runs here in seconds over every question of both benchmarks.
tests/test_ranking_twin.py holds the two equal on a fixed set of memories, for every fusion and
mode, so what the trials find is what the database would do. ``Weights`` are ranking_weights()
by the same names.

What it leaves out: filters (the benchmarks use none), the graph's expansion (episodic memories
have none), and the HNSW index's approximation (the twin reads the nearest exactly, as the SQL
does for a user with at most exact_scan_rows() memories). When every query term is common, the
SQL's scan stops after the first windows of the table; the twin takes them in ``Memories.stored``'s
order (the order a batch writes them, unless given).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import sparse

Fusion = Literal["weighted", "spread", "minmax", "rrf"]
Mode = Literal["hybrid", "lexical", "vector"]
DAY = 86400.0
MAX_POSITIONS = (
    256  # a lexeme's positions in a tsvector: a window's frequency of a term at most (window_lexemes)
)


@dataclass(frozen=True)
class Weights:
    """ranking_weights() of sql/ranking.sql."""

    k1: float = 1.2
    b: float = 0.75
    own: float = 0.4
    context: float = 0.6
    session: float = 0.3
    speaker: float = 0.3
    lexical: float = 0.8
    vector_weighted: float = 0.2
    vector_spread: float = 0.5
    vector_count: float = 1.0
    spread_floor: float = 0.05
    graph: float = 0.05
    in_time: float = 0.2
    recency: float = 0.01
    importance: float = 0.01
    rrf_k: float = 60
    rrf_scale: float = 30
    nearest: int = 40
    common: int = 200
    lexical_pool: int = 80  # the windows the term plan finds, at most this many by their BM25 (0: all)
    window: int = 2  # memories on each side of a memory's context window (memories_around)
    window_vector: float = 0.0  # trials only (not in the SQL): the share of the window's mean vector's cosine


WEIGHTS = Weights()
"""The weights search_memories has."""
TRIALS_ONLY = ("window_vector",)
"""Weights of trials the SQL does not have."""
WINDOW = WEIGHTS.window
"""The context windows' side: stored, the windows are made with the SQL's."""


@dataclass
class Memories:
    """One user's long-term memories, in the order they were written (their ``seq``)."""

    ids: list[str]  # uuids as text: their order is PostgreSQL's
    sessions: list[str | None]
    created: np.ndarray  # seconds
    terms: list[dict[str, int]]  # each memory's lexemes and how many times it holds each
    vectors: np.ndarray  # one unit vector a memory (n × d)
    speakers: list[str | None]
    importance: np.ndarray
    types: list[str] = field(default_factory=list)
    stored: np.ndarray | None = None  # each window's place (0…n−1) in memory_contexts' table (None: seq)

    def __post_init__(self) -> None:
        self.n = len(self.ids)
        if not self.types:
            self.types = ["episodic"] * self.n
        vocab: dict[str, int] = {}
        rows, cols, counts = [], [], []
        for i, held in enumerate(self.terms):
            for term, count in held.items():
                rows.append(i)
                cols.append(vocab.setdefault(term, len(vocab)))
                counts.append(count)
        self.vocab = vocab
        self.tf = sparse.csr_matrix((counts, (rows, cols)), shape=(self.n, len(vocab)), dtype=float).tocsc()
        self.length = np.asarray(self.tf.sum(axis=1)).ravel()
        self.average = max(float(self.length.sum()) / max(self.n, 1), 1.0)
        self.df = np.asarray((self.tf > 0).sum(axis=0)).ravel()
        self.window = self._windows()
        names = list(dict.fromkeys(s for s in self.sessions if s is not None))
        self.session_of = np.array([names.index(s) if s is not None else -1 for s in self.sessions])
        self.uuid_order = np.argsort(np.argsort(np.array(self.ids)))  # each id's place among them

    def window_vectors(self) -> np.ndarray:
        """Each memory's context window as one vector: the mean of its members' vectors, unit."""
        if not hasattr(self, "_window_vectors"):
            summed = self.vectors.copy()
            for k in range(self.window.shape[1]):
                j = self.window[:, k]
                ok = j >= 0
                summed[ok] += self.vectors[j[ok]]
            self._window_vectors = summed / (np.linalg.norm(summed, axis=1, keepdims=True) + 1e-12)
        made: np.ndarray = self._window_vectors
        return made

    def windowed(self, tf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each memory's context window as one text (memory_contexts): the term frequencies of
        ``tf``'s columns over the window, and its length."""
        window_tf = tf.copy()
        window_length = self.length.astype(float).copy()
        for k in range(self.window.shape[1]):
            j = self.window[:, k]
            ok = j >= 0
            window_tf[ok] += tf[j[ok]]
            window_length[ok] += self.length[j[ok]]
        return np.minimum(window_tf, MAX_POSITIONS), window_length

    def _windows(self) -> np.ndarray:
        """Each memory's context window: the WINDOW memories before it and after it in its session,
        by (created, seq); -1 where there are fewer (n × 2·WINDOW)."""
        window = np.full((self.n, 2 * WINDOW), -1)
        by_session: dict[str, list[int]] = {}
        for i, s in enumerate(self.sessions):
            if s is not None:
                by_session.setdefault(s, []).append(i)
        for members in by_session.values():
            ordered = sorted(members, key=lambda i: (self.created[i], i))
            for place, i in enumerate(ordered):
                before = ordered[max(0, place - WINDOW) : place]
                after = ordered[place + 1 : place + 1 + WINDOW]
                window[i, WINDOW - len(before) : WINDOW] = before
                window[i, WINDOW : WINDOW + len(after)] = after
        return window


@dataclass
class Query:
    terms: list[str]  # query_terms()
    vector: np.ndarray  # unit
    names: frozenset[str] = frozenset()  # lower-case names the query gives (speakers)
    time_from: float | None = None  # seconds
    time_to: float | None = None
    now: float = 0.0


@dataclass
class Ranked:
    """The ranking of every candidate, best first, with the components search_memories returns."""

    order: np.ndarray  # memory indices
    score: np.ndarray  # by memory index (NaN: no candidate)
    components: dict[str, np.ndarray]

    def ids(self, memories: Memories, limit: int) -> list[str]:
        return [memories.ids[i] for i in self.order[:limit]]


def bm25(w: Weights, idf: np.ndarray, tf: np.ndarray, length: np.ndarray, average: float) -> np.ndarray:
    """bm25() summed over the terms (columns); zero where a memory has none of them."""
    norm = w.k1 * (1 - w.b + w.b * length / average)
    return np.asarray((idf * tf * (w.k1 + 1) / (tf + norm[:, None])).sum(axis=1), dtype=float)


def idf_of(documents: float, df: np.ndarray) -> np.ndarray:
    """bm25_idf() of each term's document frequency."""
    return np.asarray(np.log(1 + (documents - df + 0.5) / (df + 0.5)), dtype=float)


def rank(
    m: Memories,
    q: Query,
    fusion: Fusion = "weighted",
    mode: Mode = "hybrid",
    w: Weights = Weights(),
    vector_weight: float | None = None,
    limit: int = 10,
) -> Ranked:
    """search_memories(…, p_mode => mode, p_fusion => fusion) of ``m`` for ``q``."""
    cosine = m.vectors @ q.vector
    if w.window_vector:
        cosine = (1 - w.window_vector) * cosine + w.window_vector * (m.window_vectors() @ q.vector)
    pool = max(w.nearest, limit) if mode != "vector" or q.time_from is not None else limit
    by_distance = np.lexsort((m.uuid_order, -cosine))
    in_pool = np.zeros(m.n, bool)
    core = np.zeros(m.n, bool)
    if mode != "lexical":
        in_pool[by_distance[:pool]] = True
        core[by_distance[: w.nearest]] = True
    if mode == "vector":
        return _by_vector(m, q, cosine, in_pool, w, limit)
    kept = [t for t in dict.fromkeys(q.terms) if t in m.vocab]
    cols = [m.vocab[t] for t in kept]
    tf = m.tf[:, cols].toarray() if cols else np.zeros((m.n, 0))
    window_tf, window_length = m.windowed(tf)
    df = m.df[cols].astype(float)
    chosen = _candidates(m, q, window_tf, window_length, df, core, fusion, w)
    lexical_rows = chosen.copy()
    own, context, session, most = _lexical(m, tf, window_tf, window_length, chosen, df, w)
    found = in_pool | chosen
    vector_raw = np.maximum(0, np.where(mode == "lexical", 0.0, cosine))
    speaker = np.array(
        [1.0 if own[i] > 0 and (s or "").lower() in q.names else 0.0 for i, s in enumerate(m.speakers)]
    )
    session = np.where(own > 0, session, 0.0)

    def best_of(values: np.ndarray) -> np.ndarray:
        top = values[found].max() if found.any() else 0.0
        return values / top if top > 0 else np.full(m.n, np.nan)

    if fusion in ("spread", "minmax"):
        top = vector_raw[found].max() if found.any() else 0.0
        base = found & (vector_raw > 0) & (core | lexical_rows)
        least_core = vector_raw[base].min() if base.any() else np.nan
        spread = top - least_core if base.any() else np.nan
        vector_n = np.maximum(0, 1 - (top - vector_raw) / np.fmax(spread, w.spread_floor))
    else:
        top = vector_raw[found].max() if found.any() else 0.0
        vector_n = vector_raw / top if top > 0 else np.full(m.n, np.nan)
    own_n, context_n, session_n = best_of(own), best_of(context), best_of(session)
    most_value = most if most and most > 0 else np.nan
    held = min(1.0, own[found].max() / most_value) if found.any() and most_value == most_value else 0.0
    held = 0.0 if held != held else held
    lexical = (
        w.own * np.nan_to_num(own_n)
        + w.context * np.nan_to_num(context_n)
        + w.session * np.nan_to_num(session_n)
        + w.speaker * speaker
    ) / (w.own + w.context + w.session + w.speaker)
    if mode == "lexical":
        relevance = lexical.copy()
    elif fusion == "rrf":
        relevance = w.rrf_scale * (
            np.where(lexical > 0, 1 / (w.rrf_k + _rank(lexical, found)), 0)
            + np.where(vector_raw > 0, 1 / (w.rrf_k + _rank(vector_raw, found)), 0)
        )
    else:
        weight = _vector_weight(
            fusion, vector_weight, held, lexical, vector_raw, found & (core | lexical_rows), w
        )
        relevance = w.lexical * lexical + weight * np.nan_to_num(vector_n)
    final, order, in_time, recency = _scored(m, q, relevance, found, w)
    components = {
        "vector_score": np.nan_to_num(vector_n),
        "text_score": np.nan_to_num(own_n),
        "context_score": np.nan_to_num(context_n),
        "session_score": np.nan_to_num(session_n),
        "speaker_score": speaker,
        "time_score": in_time,
        "recency_score": recency,
    }
    return Ranked(order, final, components)


def _candidates(
    m: Memories,
    q: Query,
    window_tf: np.ndarray,
    window_length: np.ndarray,
    df: np.ndarray,
    core: np.ndarray,
    fusion: Fusion,
    w: Weights,
) -> np.ndarray:
    """memory_term_plan and memory_lexical_branch's candidates: the memories whose context window
    holds a rare query term (or, every term common, all of the common ones: the first ``common``
    the scan returns), at most ``lexical_pool`` of them, the best by their window's BM25, once the
    user has more than ``common`` memories; and the nearest by vector. Also returned: what the scan
    found, before its cap."""
    holding = np.zeros(m.n, bool)  # the windows that hold the term plan's query
    scanned = np.zeros(m.n, bool)  # what its scan returns
    if len(df) and m.n:
        rare = (df >= 1) & (df <= w.common)
        frequent = df > w.common
        if rare.any():
            holding = scanned = np.asarray((window_tf[:, rare] > 0).any(axis=1))
        elif frequent.any():
            holding = np.asarray((window_tf[:, frequent] > 0).all(axis=1))
            place = np.arange(m.n) if m.stored is None else m.stored  # seq: as a batch writes them
            so_far = np.cumsum(holding[np.argsort(place)])  # holding windows, in the table's order
            scanned = holding & (so_far[place] <= w.common)  # the first rows the scan returns
    capped = scanned.copy()
    if m.n > w.common and w.lexical_pool and capped.sum() > w.lexical_pool:
        idf = idf_of(max(m.n, 1), df)
        context = bm25(w, idf, window_tf, window_length, (2 * WINDOW + 1) * m.average)
        rows = np.flatnonzero(capped)
        best = rows[np.lexsort((m.uuid_order[rows], -context[rows]))[: w.lexical_pool]]
        capped = np.zeros(m.n, bool)
        capped[best] = True
    nearest = core & ~capped
    if fusion == "rrf":  # the lexical branch holds the memories whose windows hold the query's terms
        nearest &= holding
    return capped | (nearest if len(q.terms) else np.zeros(m.n, bool))


def _lexical(
    m: Memories,
    tf: np.ndarray,
    window_tf: np.ndarray,
    window_length: np.ndarray,
    chosen: np.ndarray,
    df: np.ndarray,
    w: Weights,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """BM25 of each chosen memory, of its context window and of its session as one text
    (memory_lexical_branch, from the stored contexts and session terms), and what BM25 could give
    the query terms the chosen memories hold."""
    own, context, session = np.zeros(m.n), np.zeros(m.n), np.zeros(m.n)
    if tf.shape[1] == 0 or not chosen.any():
        return own, context, session, 0.0
    idf = idf_of(max(m.n, 1), df)
    own = np.where(chosen, bm25(w, idf, tf, m.length.astype(float), m.average), 0)
    context = np.where(chosen, bm25(w, idf, window_tf, window_length, (2 * WINDOW + 1) * m.average), 0)
    sessions = m.session_of.max() + 1
    if sessions > 0:
        by_session = np.zeros((sessions, tf.shape[1]))
        rows = m.session_of >= 0
        np.add.at(by_session, m.session_of[rows], tf[rows])
        session_score = (idf * by_session * (w.k1 + 1) / (by_session + w.k1)).sum(axis=1)
        session = np.where(chosen & rows, session_score[np.maximum(m.session_of, 0)], 0)
    present = (np.where(chosen[:, None], tf, 0) > 0).any(axis=0)  # the terms a chosen memory holds
    most = float(idf[present].sum() * (w.k1 + 1))
    return own, context, session, most


def _vector_weight(
    fusion: Fusion,
    weight: float | None,
    held: float,
    lexical: np.ndarray,
    vector_raw: np.ndarray,
    base: np.ndarray,
    w: Weights,
) -> float:
    """fusion_vector_weight(): spread damps its weight by what the best lexical match holds and by
    the cosine's agreement (correlation) with the lexical ranking over the nearest."""
    if fusion == "spread":
        rows = base & (vector_raw > 0)
        agreement = 0.0
        if rows.sum() >= 2 and np.ptp(lexical[rows]) > 0 and np.ptp(vector_raw[rows]) > 0:
            agreement = float(np.corrcoef(lexical[rows], vector_raw[rows])[0, 1])
        return (w.vector_spread if weight is None else weight) * (1 - held) * (1 - max(0.0, agreement))
    if fusion == "minmax":
        return w.vector_count if weight is None else weight
    return w.vector_weighted if weight is None else weight


def _rank(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """SQL's rank() over ``rows`` by ``values`` descending (ties share the lowest rank)."""
    ranks = np.zeros(len(values))
    kept = values[rows]
    ranks[rows] = 1 + np.array([(kept > v).sum() for v in kept])
    return ranks


def _scored(
    m: Memories, q: Query, relevance: np.ndarray, found: np.ndarray, w: Weights
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """ranking_score() of every found memory (the time range's weight added to its relevance), the
    found memories best first (ties by id), and the time and recency components."""
    in_time = _in_time(m, q)
    recency = 1 / (1 + np.maximum(0, (q.now - m.created) / DAY))
    final = relevance + w.in_time * in_time + w.recency * recency + w.importance * m.importance
    final = np.where(found, final, np.nan)
    order = np.lexsort((m.uuid_order, -np.nan_to_num(final, nan=-np.inf)))
    return final, order[found[order]], in_time, recency


def _in_time(m: Memories, q: Query) -> np.ndarray:
    if q.time_from is None:
        return np.zeros(m.n)
    inside = m.created >= q.time_from
    if q.time_to is not None:
        inside &= m.created < q.time_to
    return inside.astype(float)


def _by_vector(
    m: Memories, q: Query, cosine: np.ndarray, in_pool: np.ndarray, w: Weights, limit: int
) -> Ranked:
    """search_memories_by_vector: the nearest, each over the best, with time, recency and importance."""
    pool = np.flatnonzero(in_pool)
    raw = np.maximum(0, cosine)
    top = raw[pool].max() if len(pool) else 0.0
    vector_n = raw / top if top > 0 else np.zeros(m.n)
    final, order, in_time, recency = _scored(m, q, vector_n, in_pool, w)
    return Ranked(order, final, {"vector_score": vector_n, "time_score": in_time, "recency_score": recency})


def ids_of(m: Memories, ranked: Ranked, limit: int) -> Sequence[str]:
    return ranked.ids(m, limit)
