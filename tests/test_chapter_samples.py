"""The chapter's own samples run as printed, with only the import changed: its RAG tool with a
vector store's collection, its search with min_score, its memory configuration with a storage
folder. The arguments without a meaning here are accepted and said once."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

import pytest

from hello_pgmem import Settings
from hello_pgmem.ops import migrate
from tests.samples import run_python

RAG_SAMPLE = """
from hello_pgmem.tools import RAGTool

rag_tool = RAGTool(
    knowledge_base_path="./knowledge_base",
    collection_name="test_collection",
    rag_namespace="test"
)

result1 = rag_tool.run({"action":"add_text",
    "text":"Python是一种高级编程语言，由Guido van Rossum于1991年首次发布。Python的设计哲学强调代码的可读性和简洁的语法。",
    "document_id":"python_intro"})
print(f"知识1: {result1}")

result2 = rag_tool.run({"action":"add_text",
    "text":"机器学习是人工智能的一个分支，通过算法让计算机从数据中学习模式。主要包括监督学习、无监督学习和强化学习三种类型。",
    "document_id":"ml_basics"})
print(f"知识2: {result2}")

result = rag_tool.run({"action":"search",
    "query":"Python编程语言的历史",
    "limit":3,
    "min_score":0.1
})
print(result)

result = rag_tool.run({"action":"stats"})
print(result)
"""

CONFIG_SAMPLE = """
from hello_pgmem import MemoryConfig

config = MemoryConfig(
    storage_path="./memory_data",
    max_capacity=100,
    importance_threshold=0.1,
    decay_factor=0.95,
    working_memory_capacity=10,
    working_memory_tokens=2000,
    working_memory_ttl_minutes=120,
    perceptual_memory_modalities=["text", "image", "audio"]
)
again = MemoryConfig(storage_path="./memory_data")
print(config.working_memory_ttl_minutes, config.storage_path)
"""


@pytest.fixture(scope="module")
def environment(new_database: Callable[[], str]) -> dict[str, str]:
    url = new_database()
    migrate.upgrade(Settings(database_url=url))
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "EMBED_", "RERANK_"))}
    return {**kept, "DATABASE_URL": url, "EMBED_MODEL_TYPE": "hashing"}


def run(code: str, environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    ran = run_python(code, environment)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return ran


def test_the_chapters_rag_tool_runs_as_printed(environment: dict[str, str]) -> None:
    ran = run(RAG_SAMPLE, environment)
    assert "python_intro" in ran.stdout.split("知识2")[-1], ran.stdout
    assert ran.stderr.count("collection_name") == 1, "said once: the namespace is the collection"


def test_the_chapters_memory_config_is_accepted(environment: dict[str, str]) -> None:
    ran = run(CONFIG_SAMPLE, environment)
    assert ran.stdout.strip() == "120 ./memory_data"
    assert ran.stderr.count("storage_path") == 1, "said once, however many configs name it"
