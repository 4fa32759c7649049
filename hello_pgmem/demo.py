"""The reference scenarios, end to end, as a readable report (``hello-pgmem demo``)."""

from __future__ import annotations

from collections.abc import Iterator

from hello_pgmem.db import Database
from hello_pgmem.tools.memory_tool import MemoryTool

DEMO_USER = "demo_user"
PEOPLE = [
    ("用户张三是一名Python开发者，专注于机器学习和数据分析", 0.8),
    ("李四是前端工程师，擅长React和Vue.js开发", 0.7),
    ("王五是产品经理，负责用户体验设计和需求分析", 0.6),
]


def memory_demo(database: Database) -> Iterator[str]:
    """Run the memory-tool scenario of the reference for ``demo_user``; yield report lines."""
    tool = MemoryTool(user_id=DEMO_USER, database=database)
    try:
        model = tool.memory_manager.embedder.model_name
        yield f"\n=== 记忆工具演示 (user: {DEMO_USER}, embeddings: {model}) ==="
        yield tool.run("clear_all")
        yield "\n--- 添加情景记忆 ---"
        for content, importance in PEOPLE:
            yield tool.run("add", content=content, memory_type="episodic", importance=importance)
        yield "\n--- 搜索 '前端工程师' ---"
        yield tool.run("search", query="前端工程师", limit=3)
        yield "\n--- 工作记忆 ---"
        for content, importance in PEOPLE:
            yield tool.run("add", content=content, memory_type="working", importance=importance)
        yield tool.run("search", query="前端工程师", memory_type="working", limit=3)
        yield "\n--- 记忆摘要 ---"
        yield tool.run("summary", limit=3)
        yield "\n--- 整合: 重要的工作记忆 → 情景记忆 (阈值 0.75) ---"
        yield tool.run("consolidate", from_type="working", to_type="episodic", importance_threshold=0.75)
        yield "\n--- 遗忘: 重要性低于 0.65 的记忆 ---"
        yield tool.run("forget", strategy="importance_based", threshold=0.65)
        yield "\n--- 统计 ---"
        yield tool.run("stats")
    finally:
        tool.close()
