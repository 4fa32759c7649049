"""Heading-aware chunking: sizes, overlap, headings, code and tables whole, Chinese without spaces."""

from __future__ import annotations

import itertools
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.text import count_tokens
from hello_pgmem.rag.blocks import FENCE, parse_blocks
from hello_pgmem.rag.chunking import Chunk, chunk_markdown

DOC = """# 指南

开头的一段话。

## 安装

先安装依赖。

```bash
# 这一行不是标题
pip install hello-pgmem
```

| 命令 | 作用 |
| --- | --- |
| make demo | 演示 |
| make test | 测试 |

## 使用

使用说明。
"""


def test_headings_code_and_tables() -> None:
    blocks = parse_blocks(DOC)
    assert [(b.kind, b.heading_path) for b in blocks] == [
        ("text", ("指南",)),
        ("text", ("指南", "安装")),
        ("code", ("指南", "安装")),
        ("table", ("指南", "安装")),
        ("text", ("指南", "使用")),
    ]
    assert blocks[2].text.startswith("```bash\n# 这一行不是标题")
    for block in blocks:
        assert DOC[block.start : block.end].strip("\n") == block.text


def test_small_document_is_one_chunk_with_spans() -> None:
    [chunk] = chunk_markdown(DOC, 800, 100)
    assert chunk.heading_path == ["指南"]
    assert (chunk.start, chunk.position) == (0, 0)
    assert chunk.tokens == count_tokens(chunk.content)


def test_chinese_without_spaces_is_split_between_sentences() -> None:
    text = "# 历史\n\n" + "".join(f"第{i}句话讲述了一段很长的历史故事。" for i in range(200))
    chunks = chunk_markdown(text, 120, 20)
    assert len(chunks) > 10
    for chunk in chunks:
        assert chunk.tokens <= 120
        assert chunk.heading_path == ["历史"]
    for chunk in chunks[:-1]:
        assert chunk.content.endswith("。"), "cut between sentences, not inside one"


def test_overlap_repeats_the_end_of_the_previous_chunk() -> None:
    text = "\n\n".join(f"段落{i}：" + "内容" * 30 + "。" for i in range(12))
    chunks = chunk_markdown(text, 200, 80)
    assert len(chunks) > 3
    for previous, current in itertools.pairwise(chunks):
        last_paragraph = previous.content.split("\n\n")[-1]
        assert current.content.startswith(last_paragraph) or last_paragraph.endswith(
            current.content.split("\n\n")[0]
        )
        assert current.start < previous.end, "overlapping character spans"


def test_code_blocks_and_tables_are_never_cut_unless_alone_too_big() -> None:
    code = "```python\n" + "\n".join(f"value_{i} = {i}" for i in range(20)) + "\n```"
    table = "| a | b |\n| --- | --- |\n" + "\n".join(f"| {i} | {i * i} |" for i in range(15))
    text = "\n\n".join(["前言。" * 20, code, "中间。" * 20, table, "结尾。" * 20])
    chunks = chunk_markdown(text, 160, 20)
    assert any(code in c.content for c in chunks)
    assert any(table in c.content for c in chunks)
    big = "```python\n" + "\n".join(f"value_{i} = {i}" for i in range(400)) + "\n```"
    pieces = chunk_markdown(big, 200, 20)
    assert len(pieces) > 1
    for piece in pieces:
        assert piece.content.startswith("```python\n") and piece.content.endswith("\n```")
        assert piece.tokens <= 200


def test_a_single_huge_word_is_hard_split() -> None:
    chunks = chunk_markdown("x" * 5000 + "\n", 100, 10)
    assert len(chunks) > 1 and all(0 < c.tokens <= 100 for c in chunks)
    assert sum(c.content.count("x") for c in chunks) >= 5000, "every character is kept"


@pytest.mark.parametrize(
    ("size", "overlap", "field"),
    [(8, 0, "chunk_size"), (0, 0, "chunk_size"), (100, 90, "chunk_overlap"), (100, -1, "chunk_overlap")],
)
def test_bad_sizes(size: int, overlap: int, field: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        chunk_markdown("text", size, overlap)
    assert caught.value.field == field


WORDS = st.text(alphabet="天地玄黄宇宙洪荒日月盈昃。，abc xyz.!?", min_size=1, max_size=600)
LONG_LINE = st.integers(1, 3000).map(lambda n: " ".join(f"w{i}" for i in range(n)))
LONG_WORD = st.integers(1, 6000).map(lambda n: "q" * n)


@st.composite
def fenced_code(draw: st.DrawFn) -> str:
    marker = draw(st.sampled_from(["```", "````", "~~~"]))
    language = draw(st.sampled_from(["", "python", "sql"]))
    lines = draw(st.lists(st.text(alphabet="abc =()#|`-", max_size=300), max_size=200))
    return "\n".join([marker + language, *lines, marker])


@st.composite
def table(draw: st.DrawFn) -> str:
    """A table of any width, with a header row, row markers naming the table, and empty rows."""
    name = f"t{draw(st.integers(0, 10**9))}"
    width = draw(st.integers(1, 400))
    height = draw(st.integers(0, 60))
    cell = st.text(alphabet="ab 中文", max_size=12)
    header = "| " + " | ".join(f"{name}h{i}" for i in range(width)) + " |"
    rows = [
        "| "
        + " | ".join([f"{name}row", *draw(st.lists(cell, min_size=width - 1, max_size=width - 1))])
        + " |"
        if draw(st.booleans()) or width == 1
        else "|" + " |" * width
        for _ in range(height)
    ]
    return "\n".join([header, "|" + "---|" * width, *rows])


markdown_text = st.lists(
    st.one_of(
        WORDS,
        LONG_LINE,
        LONG_WORD,
        fenced_code(),
        table(),
        st.sampled_from(["# 标题", "## 小节", "### Third level", "# T"]),
    ),
    max_size=20,
).map("\n\n".join)


def joined_count(chunks: list[Chunk], letter: str) -> int:
    return sum(c.content.count(letter) for c in chunks)


def balanced(content: str) -> bool:
    """Every opened fence is closed, read as CommonMark does: inside a fence only a line of the
    same character, at least as long, closes it; anything else is code."""
    open_marker: str | None = None
    for line in content.splitlines():
        fence = FENCE.match(line)
        if fence is None:
            continue
        marker = fence.group(1)
        if open_marker is None:
            open_marker = marker
        elif line.strip() == marker and marker[0] == open_marker[0] and len(marker) >= len(open_marker):
            open_marker = None
    return open_marker is None


@settings(max_examples=int(os.environ.get("PGMEM_CHUNK_EXAMPLES", "200")), deadline=None)
@given(text=markdown_text, size=st.integers(40, 1200), overlap_share=st.floats(0, 0.45))
def test_chunking_properties(text: str, size: int, overlap_share: float) -> None:
    overlap = int(size * overlap_share)
    chunks = chunk_markdown(text, size, overlap)
    for position, chunk in enumerate(chunks):
        assert chunk.position == position
        assert chunk.content.strip(), "no empty chunk"
        assert chunk.tokens == count_tokens(chunk.content) <= size, "every chunk within the budget"
        assert 0 <= chunk.start <= chunk.end <= len(text)
        assert balanced(chunk.content), f"fences balanced: {chunk.content[:200]!r}"
    assert sum(len(c.content) for c in chunks) <= 3 * len(text) + size, "no explosion of text"
    # every word and row marker of the input lands in some chunk, and every character of a long word
    assert joined_count(chunks, "q") >= text.count("q")
    joined = " ".join(c.content for c in chunks)
    words = {w for w in re.findall(r"[a-z]+\d*", text) if set(w) != {"q"}}  # long q-runs are cut
    assert words <= set(re.findall(r"[a-z]+\d*", joined))
    # a chunk that starts inside a table starts with the table's header row, unless the header is
    # too wide to repeat (over a quarter of the room: the chunker's limit is half, less a heading)
    # (two tables may share a name: the row's own header is one of its name before the chunk ends)
    headers = [(m.start(), m.group(1), m.group(0)) for m in re.finditer(r"^\| (t\d+)h0 .*$", text, re.M)]
    for chunk in chunks:
        row = re.match(r"^\| (t\d+)row ", chunk.content)
        if row is not None:
            own = [h for start, name, h in headers if name == row.group(1) and start < chunk.end]
            wide = [count_tokens(f"{h}\n|{'---|' * (h.count(' | ') + 1)}") for h in own]
            assert max(wide) > (size - overlap) // 4, "a header that fits leads"


def counted_characters(text: str, size: int, overlap: int) -> int:
    """The work of chunking ``text``: the characters handed to the token counter, a measure of
    time that does not depend on the machine's load."""
    work = 0

    def count(piece: str) -> int:
        nonlocal work
        work += len(piece)
        return count_tokens(piece)

    chunk_markdown(text, size, overlap, count)
    return work


@settings(max_examples=int(os.environ.get("PGMEM_CHUNK_EXAMPLES", "60")), deadline=None)
@given(
    text=markdown_text,
    size=st.sampled_from([16, 64, 800, 8192]),
    overlap_share=st.floats(0, 0.45),
)
def test_chunking_work_grows_linearly(text: str, size: int, overlap_share: float) -> None:
    """Twice the input costs at most 2.5 times the work, at any chunk size, give or take the work
    of one chunk's boundary: two chunks' characters (it was quadratic: the packing counted the
    whole chunk again for every block added)."""
    text = text.strip() or "w"
    base = "\n\n".join([text] * max(1, 20_000 // len(text)))
    overlap = int(size * overlap_share)
    once, twice = (
        counted_characters(base, size, overlap),
        counted_characters(f"{base}\n\n{base}", size, overlap),
    )
    characters_per_token = len(base) / max(1, count_tokens(base))
    boundary = 2 * size * characters_per_token
    assert twice <= 2.5 * once + boundary, f"{once} -> {twice} characters counted"


@pytest.mark.parametrize(
    "text", ["a\n\n" * 20_000, "word. " * 20_000, "x" * 200_000, "长句子，" * 20_000, "| a | b |\n" * 20_000]
)
def test_the_worst_shapes_cost_linear_work(text: str) -> None:
    """The shapes that were quadratic in the chunk size or worse: many paragraphs in one chunk, one
    run of sentences, one endless word, Chinese clauses, a long table. Each character of the input
    is counted a bounded number of times (about 30 at most, for the binary search in a long word;
    the packing used to count a chunk again for every block it took: over 1,000 at 8,192 tokens)."""
    half = text[: len(text) // 2]
    for size in (16, 8192):
        work = counted_characters(text, size, size // 4)
        assert work <= 2.5 * counted_characters(half, size, size // 4)
        assert work <= 40 * len(text), f"{work / len(text):.0f} characters counted per input character"


def test_a_wide_table_does_not_explode() -> None:
    """The case of the issue: a one-row table of 400 columns gave 973 chunks and 4.2 MB."""
    header = "| " + " | ".join(f"column{i}" for i in range(400)) + " |"
    row = "| " + " | ".join(f"value{i}" for i in range(400)) + " |"
    text = "\n".join([header, "|" + "---|" * 400, row]) + "\n"
    chunks = chunk_markdown(text, 800, 100)
    assert len(chunks) <= 10 and sum(len(c.content) for c in chunks) <= 2 * len(text)
    assert max(c.tokens for c in chunks) <= 800


def test_empty_layout_rows_are_dropped() -> None:
    text = (
        "| name |"
        + " |" * 300
        + "\n|"
        + "---|" * 301
        + "\n"
        + "\n".join("|" + " |" * 301 for _ in range(200))
    )
    text += "\n| Alice |" + " |" * 300 + "\n"
    chunks = chunk_markdown(text, 200, 20)
    assert sum(len(c.content) for c in chunks) <= len(text) // 10
    assert any("Alice" in c.content for c in chunks)


def test_a_block_after_a_heading_keeps_its_fence_and_header() -> None:
    code = "# T\n\n```python\n" + "\n".join(f"x_{i} = {i}" for i in range(400)) + "\n```\n"
    chunks = chunk_markdown(code, 200, 20)
    assert len(chunks) > 5 and chunks[0].content.startswith("# T\n```python\n")
    assert all(c.content.startswith("```python\n") and c.content.endswith("\n```") for c in chunks[1:])
    table_text = "# T\n\n| a | b |\n| --- | --- |\n" + "\n".join(f"| r{i} | {i} |" for i in range(300)) + "\n"
    chunks = chunk_markdown(table_text, 200, 20)
    assert len(chunks) > 5 and chunks[0].content.startswith("# T\n| a | b |")
    assert all(c.content.startswith("| a | b |\n| --- | --- |\n| r") for c in chunks[1:])


@pytest.mark.parametrize("size", [10**9, 8193])
def test_chunk_size_is_bounded(size: int) -> None:
    with pytest.raises(InvalidInputError, match="chunk_size: must be an integer from 16 to 8192"):
        chunk_markdown("a\n\n" * 5, size, 0)
