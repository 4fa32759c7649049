"""Heading-aware chunking: sizes, overlap, headings, code and tables whole, Chinese without spaces."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hello_pgmem.errors import ValidationError
from hello_pgmem.rag.chunking import chunk_markdown, parse_blocks
from hello_pgmem.text import count_tokens

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
    with pytest.raises(ValidationError) as caught:
        chunk_markdown("text", size, overlap)
    assert caught.value.field == field


markdown_text = st.lists(
    st.one_of(
        st.text(alphabet="天地玄黄宇宙洪荒日月盈昃。，abc xyz.", min_size=1, max_size=400),
        st.sampled_from(["# 标题", "## 小节", "```\ncode\n```", "| a | b |\n| - | - |\n| 1 | 2 |"]),
    ),
    max_size=30,
).map("\n\n".join)


@settings(max_examples=150, deadline=None)
@given(text=markdown_text, size=st.integers(40, 400), overlap_share=st.floats(0, 0.45))
def test_chunking_properties(text: str, size: int, overlap_share: float) -> None:
    overlap = int(size * overlap_share)
    chunks = chunk_markdown(text, size, overlap)
    for position, chunk in enumerate(chunks):
        assert chunk.position == position
        assert chunk.tokens <= size
        assert 0 <= chunk.start <= chunk.end <= len(text)
        assert chunk.content.strip()
    # every word of the input lands in some chunk
    words = set(re.findall(r"[a-z]+", text))
    assert words <= set(re.findall(r"[a-z]+", " ".join(c.content for c in chunks)))
