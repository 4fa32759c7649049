"""What keeping the term counts costs a write, by the length of the texts written.

    .venv/bin/python -m bench.term_counts              # about two minutes
    .venv/bin/python -m bench.term_counts --rows 1000

Texts of real conversations: LoCoMo's turns (../shared/data/locomo-dev5.json, or PGMEM_LOCOMO),
LongMemEval's user turns (../shared/data/longmemeval-s-dev.json.gz, or PGMEM_LONGMEMEVAL), and
LongMemEval's user turns joined in order into texts of about 150 and about 600 words (under the
memory's character cap). For each set, the memories of one user are staged once through
``add_memories`` (hashing embedder), then inserted again from that copy into an empty
``memories`` in batches of 500, on the server alone: with every trigger, and with the statement
trigger that stages what a write changed turned off (with it, the commit keeps the BM25 statistics,
``memory_term_counts`` and ``memory_text_totals``, the sessions' terms and the context windows in
step; without, none of them). Each twice, alternated. Reported per set: words and
distinct lexemes per memory, ms per memory with and without, the difference per memory and per
lexeme, and its share of the insert. Writes bench/results/term-counts-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import time
from pathlib import Path
from typing import Any

import psycopg

from bench import harness
from bench.datasets import LOCOMO_DATA as LOCOMO
from bench.datasets import LONGMEMEVAL_DATA as LONGMEMEVAL
from bench.datasets import load_locomo, load_longmemeval
from bench.harness import fresh_database
from hello_pgmem import Database, HashingEmbedder, MemoryConfig, MemoryManager, Settings

RESULTS = Path(__file__).resolve().parent / "results"
BATCH = 500
STATISTICS = ("memories_stat_changes_insert",)
COLUMNS = "user_id, id, memory_type, content, importance, session_id, metadata, created_at, embedding, embedding_model"


def joined(turns: list[str], words: int, cap: int) -> list[str]:
    """Consecutive turns joined into texts of about ``words`` words, each under ``cap`` characters."""
    texts, current = [], ""
    for turn in turns:
        current = f"{current}\n{turn}" if current else turn
        if len(current.split()) >= words:
            texts.append(current[:cap])
            current = ""
    return texts


def text_sets(rows: int) -> dict[str, list[str]]:
    """The sets of texts, ``rows`` each (as many as the data holds)."""
    cap = MemoryConfig().max_content_chars
    locomo = [
        turn.text
        for conversation in load_locomo(Path(os.environ.get("PGMEM_LOCOMO", LOCOMO)))
        for turn in conversation.turns
    ]
    path = Path(os.environ.get("PGMEM_LONGMEMEVAL", LONGMEMEVAL))
    user_turns = [key.text for instance in load_longmemeval(path) for key in instance.keys]
    user_turns = [text for text in dict.fromkeys(user_turns) if text.strip()]  # instances share sessions
    return {
        "LoCoMo turns": locomo[:rows],
        "LongMemEval user turns": [text[:cap] for text in user_turns[:rows]],
        "joined, ~150 words": joined(user_turns, 150, cap)[:rows],
        "joined, ~600 words": joined(user_turns, 600, cap)[:rows],
    }


def insert_all(conn: psycopg.Connection[Any], rows: int, statistics: bool) -> float:
    """Seconds to insert the staged rows into an empty ``memories``, with or without the
    statistics' triggers."""
    conn.execute("TRUNCATE memories CASCADE")
    action = "ENABLE" if statistics else "DISABLE"
    for trigger in STATISTICS:
        conn.execute(f"ALTER TABLE memories {action} TRIGGER {trigger}")
    started = time.perf_counter()
    for start in range(0, rows, BATCH):
        conn.execute(
            f"INSERT INTO memories ({COLUMNS}) SELECT {COLUMNS} FROM staged"
            " WHERE n > %s AND n <= %s ORDER BY n",
            (start, start + BATCH),
        )
    seconds = time.perf_counter() - started
    for trigger in STATISTICS:
        conn.execute(f"ALTER TABLE memories ENABLE TRIGGER {trigger}")
    return seconds


def measure(settings: Settings, texts: list[str]) -> dict[str, Any]:
    """Stage ``texts`` as one user's memories, then time their insert with and without the statistics."""
    with Database(settings) as db:
        manager = MemoryManager(user_id="stage", database=db, embedder=HashingEmbedder())
        for start in range(0, len(texts), BATCH):
            manager.add_memories(texts[start : start + BATCH], "episodic", 0.5)
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        conn.execute(f"SET search_path = {settings.schema_name}, public")
        conn.execute("DROP TABLE IF EXISTS staged")
        conn.execute(
            f"CREATE TABLE staged AS SELECT row_number() OVER (ORDER BY seq) AS n, {COLUMNS} FROM memories"
        )
        row = conn.execute(
            "SELECT count(*), avg(array_length(regexp_split_to_array(btrim(content), '\\s+'), 1)),"
            " avg(length(lexemes)), avg(term_count) FROM memories"
        ).fetchone()
        assert row is not None
        count, words, lexemes, terms = int(row[0]), float(row[1]), float(row[2]), float(row[3])
        timings: dict[str, list[float]] = {"with": [], "without": []}
        for _ in range(2):
            timings["with"].append(insert_all(conn, count, True))
            timings["without"].append(insert_all(conn, count, False))
        conn.execute("DROP TABLE staged")
        conn.execute("TRUNCATE memories CASCADE")
    with_ms = min(timings["with"]) / count * 1000
    without_ms = min(timings["without"]) / count * 1000
    return {
        "memories": count,
        "words_per_memory": round(words, 1),
        "lexemes_per_memory": round(lexemes, 1),
        "terms_per_memory": round(terms, 1),
        "seconds": timings,
        "ms_per_memory_with": round(with_ms, 4),
        "ms_per_memory_without": round(without_ms, 4),
        "statistics_ms_per_memory": round(with_ms - without_ms, 4),
        "statistics_us_per_lexeme": round((with_ms - without_ms) * 1000 / lexemes, 2),
        "statistics_share": round((with_ms - without_ms) / with_ms, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=2000, help="memories per set (as many as the data holds)")
    args = parser.parse_args()
    report: dict[str, Any] = {"machine": harness.machine(), "batch": BATCH, "sets": {}}
    with fresh_database() as settings:
        for name, texts in text_sets(args.rows).items():
            report["sets"][name] = result = measure(settings, texts)
            print(
                f"{name:24s} {result['memories']:5d} memories, {result['words_per_memory']:6.1f} words,"
                f" {result['lexemes_per_memory']:6.1f} lexemes: {result['ms_per_memory_with']:.3f} ms"
                f" with, {result['ms_per_memory_without']:.3f} without; the statistics"
                f" {result['statistics_ms_per_memory']:.3f} ms a memory"
                f" ({result['statistics_us_per_lexeme']:.2f} us a lexeme, {result['statistics_share']:.0%})",
                flush=True,
            )
    RESULTS.mkdir(exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M")
    (RESULTS / f"term-counts-{stamp}.json").write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
