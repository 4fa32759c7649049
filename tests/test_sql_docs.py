"""Every SQL example of docs/sql.md runs against a populated database and returns what it says."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hello_pgmem import Database, HashingEmbedder, KnowledgeBase, Settings
from hello_pgmem.memory import MemoryManager
from hello_pgmem.ops import migrate

DOC = Path(__file__).resolve().parent.parent / "docs" / "sql.md"
EXAMPLES = re.findall(r"```sql\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


@pytest.fixture(scope="module")
def populated(new_database: Callable[[], str]) -> Iterator[Database]:
    settings = Settings(database_url=new_database(), retrieval_log=True)
    migrate.upgrade(settings)
    embedder = HashingEmbedder()
    with Database(settings) as db:
        manager = MemoryManager(user_id="alice", database=db, embedder=embedder)
        for content, importance in [
            ("用户张三是一名Python开发者，专注于机器学习和数据分析", 0.8),
            ("李四是前端工程师，擅长React和Vue.js开发", 0.7),
            ("王五是产品经理，负责用户体验设计和需求分析", 0.6),
        ]:
            manager.add_memory(content, "semantic", importance)
            manager.add_memory(content, "episodic", importance)
        manager.add_memory("李四是前端工程师，擅长 React 和 Vue.js 开发。", "episodic", 0.3)
        manager.retrieve_memories("前端工程师")
        kb = KnowledgeBase(db, embedder, "docs")
        kb.add_text("# Python\n\nPython由Guido van Rossum于1991年首次发布。", "python_intro")
        kb.search("Python 历史")
        yield db


def test_the_page_has_examples() -> None:
    assert len(EXAMPLES) >= 12


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"example{i}" for i in range(len(EXAMPLES))])
def test_sql_example(populated: Database, example: str) -> None:
    expectation = re.search(r"-- expect: (.+)", example)
    assert expectation, "every example says what it returns"
    with populated.connection() as conn:
        conn.execute("SET search_path TO public")  # the examples qualify every name themselves
        rows = conn.execute(example).fetchall()
        conn.rollback()
    wanted = expectation.group(1).strip()
    if wanted == "at least 1 row":
        assert rows
    else:
        assert len(rows) == int(wanted.split()[0])
