"""The ranking's SQL reads as the stages it is: search_memories fits on a screen, BM25 is written
once, and its weights are in one named place (ranking_weights()); each weight a DBA reads there is
the one the plan uses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hello_pgmem import Database

SQL = Path(__file__).resolve().parent.parent / "sql"
RANKING_FUNCTIONS = (
    "search_memories",
    "search_memories_by_vector",
    "memory_term_plan",
    "memory_vector_pool",
    "memory_lexical_branch",
    "specific_entities",
    "graph_memories",
    "search_sessions",
    "session_scores",
    "search_chunks",
    "search_memories_as_of",
)


def bodies() -> dict[str, str]:
    """Every function of sql/, from its CREATE to the end of its body, without comments."""
    found = {}
    for path in SQL.glob("*.sql"):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(
            r"CREATE OR REPLACE FUNCTION (\w+)\(.*?(?=\nCOMMENT ON FUNCTION)", text, re.S
        ):
            found[match.group(1)] = re.sub(r"--[^\n]*", "", match.group(0))
    return found


def test_search_memories_fits_on_a_screen() -> None:
    text = (SQL / "search.sql").read_text(encoding="utf-8")
    body = re.search(r"CREATE OR REPLACE FUNCTION search_memories\(.*?\nEND \$\$;", text, re.S)
    assert body is not None
    assert body.group(0).count("\n") + 1 <= 160


def test_bm25_is_written_once() -> None:
    """Its saturation (k1) and length normalisation (b) appear in bm25() alone."""
    for name, body in bodies().items():
        if name in ("bm25", "bm25_most", "ranking_weights"):
            continue
        assert "k1" not in body and not re.search(r"\b(2\.2|1\.2|0\.75|0\.25)\b", body), name


@pytest.mark.parametrize("name", RANKING_FUNCTIONS)
def test_no_weight_is_written_outside_ranking_weights(name: str) -> None:
    """A ranking function's numbers are 0, 1 and its arguments': every weight, pool and cap is
    ranking_weight('…'). (Index settings such as hnsw.ef_search and the argument checks' bounds
    are no weights.)"""
    body = re.split(r"\nAS \$\$|\nRETURN ", bodies()[name], maxsplit=1)[1]  # not the arguments' defaults
    body = re.sub(r"'(?:[^']|'')*'", "''", body)  # strings: names, messages
    body = re.sub(r"PERFORM[^;]*;|\bIF\b.*?\bTHEN\b", "", body, flags=re.S)  # the checks' bounds
    body = re.sub(
        r"(GROUP|ORDER) BY [\d, ]+(DESC)?[\d, ]*|%\d+\$", "", body
    )  # positions, format()'s arguments
    numbers = set(re.findall(r"(?<![\w.$])\d+(?:\.\d+)?(?![\w.])", body)) - {"0", "1", "0.0", "1.0"}
    assert not numbers, f"{name} writes {sorted(numbers)}"


def test_a_weight_is_a_constant_of_the_plan(clean: Database) -> None:
    """ranking_weight('…') is folded into the plan: the formulas cost what the literals did."""
    with clean.connection() as conn:
        plan = "\n".join(
            row[0]
            for row in conn.execute(
                "EXPLAIN VERBOSE SELECT bm25(1.5, x, 10, 5), lexical_relevance(x, 1, 0, 0) FROM generate_series(1, 3) x"
            )
        )
        weights = dict(conn.execute("SELECT name, value FROM ranking_weights()").fetchall())
    assert "ranking_weight" not in plan and "'2.2'::double precision" in plan
    assert weights["k1"] == 1.2 and weights["b"] == 0.75 and weights["nearest"] == 40
