"""Every size limit is a clear InvalidInputError naming the input and the rule, and changes nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hello_pgmem import Database, HashingEmbedder, InvalidInputError, KnowledgeBase
from hello_pgmem.memory import MemoryManager
from hello_pgmem.rag import ingest
from hello_pgmem.rag.knowledge import MAX_BATCH_DOCUMENTS, MAX_TEXT_CHARS, TextDocument
from tests.conftest import row_counts


def refused(db: Database, call: Callable[[], object], field: str, rule: str) -> None:
    before = row_counts(db)
    with pytest.raises(InvalidInputError) as caught:
        call()
    assert caught.value.field == field and rule in caught.value.rule, str(caught.value)
    assert row_counts(db) == before


def test_memory_limits(make_manager: Callable[..., MemoryManager], clean: Database) -> None:
    manager = make_manager()
    manager.add_memory("张三是一名Python开发者", "semantic", 0.8)
    biggest = manager.config.max_content_chars
    refused(
        clean, lambda: manager.add_memory("x" * (biggest + 1), "episodic"), "content", f"at most {biggest}"
    )
    refused(clean, lambda: manager.add_memories(["m"] * 10_001), "contents", "between 1 and 10000")
    refused(clean, lambda: manager.add_memories([]), "contents", "between 1 and 10000")
    ceiling = manager.config.max_search_limit
    refused(
        clean,
        lambda: manager.retrieve_memories("Python", limit=ceiling + 1),
        "limit",
        f"between 1 and {ceiling}",
    )
    refused(clean, lambda: manager.retrieve_memories("Python", limit=0), "limit", "between 1")
    refused(clean, lambda: manager.graph_neighbourhood("张三", depth=4), "depth", "between 1 and 3")
    refused(clean, lambda: manager.graph_path("张三", "Python", max_depth=7), "max_depth", "between 1 and 6")


def test_rag_limits(clean: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = KnowledgeBase(clean, HashingEmbedder(), "limits")
    kb.add_text("# A\n\nfirst", "a")
    refused(
        clean, lambda: kb.add_text("x" * (MAX_TEXT_CHARS + 1), "big"), "content", f"at most {MAX_TEXT_CHARS}"
    )
    documents = [TextDocument(text=f"t{i}") for i in range(MAX_BATCH_DOCUMENTS + 1)]
    refused(clean, lambda: kb.add_texts(documents), "documents", f"between 1 and {MAX_BATCH_DOCUMENTS}")
    refused(clean, lambda: kb.search("first", top_k=101), "top_k", "between 1 and 100")
    monkeypatch.setattr(ingest, "MAX_CHUNKS_PER_DOCUMENT", 3)  # a smaller ceiling, the same check
    many = "\n\n".join(f"## Part {i}\n\n" + "内容 " * 300 for i in range(6))
    refused(clean, lambda: kb.add_text(many, "many", chunk_size=100, chunk_overlap=0), "text", "more than 3")
