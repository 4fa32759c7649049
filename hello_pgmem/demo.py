"""The reference scenarios, end to end, as a readable report (``hello-pgmem demo``)."""

from __future__ import annotations

from collections.abc import Iterator

from hello_pgmem.db import Database
from hello_pgmem.embedding import Embedder, create_embedder
from hello_pgmem.llm import create_chat_client
from hello_pgmem.tools.memory_tool import MemoryTool
from hello_pgmem.tools.rag_tool import RAGTool

DEMO_USER = "demo_user"
DEMO_NAMESPACE = "demo"
PEOPLE = [
    ("用户张三是一名Python开发者，专注于机器学习和数据分析", 0.8),
    ("李四是前端工程师，擅长React和Vue.js开发", 0.7),
    ("王五是产品经理，负责用户体验设计和需求分析", 0.6),
]
KNOWLEDGE = [
    (
        "python_intro",
        "Python是一种高级编程语言，由Guido van Rossum于1991年首次发布。Python的设计哲学强调代码的可读性和简洁的语法。",
    ),
    (
        "ml_basics",
        "机器学习是人工智能的一个分支，通过算法让计算机从数据中学习模式。主要包括监督学习、无监督学习和强化学习三种类型。",
    ),
    (
        "rag_concept",
        "RAG（检索增强生成）是一种结合信息检索和文本生成的AI技术。它通过检索相关知识来增强大语言模型的生成能力。",
    ),
]


def full_demo(database: Database) -> Iterator[str]:
    """Every scenario; the agent conversation only when a chat model is configured."""
    embedder = create_embedder(database.settings)
    yield from memory_demo(database, embedder)
    yield from graph_demo(database, embedder)
    yield from rag_demo(database, embedder)
    yield from agent_demo(database, embedder)


def memory_demo(database: Database, embedder: Embedder | None = None) -> Iterator[str]:
    """The memory-tool scenario of the reference for ``demo_user``."""
    tool = MemoryTool(user_id=DEMO_USER, database=database, embedder=embedder)
    model = tool.memory_manager.embedder.model_name
    yield f"\n=== 记忆工具演示 (user: {DEMO_USER}, embeddings: {model}) ==="
    yield tool.run("clear_all", confirm=True)
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


def graph_demo(database: Database, embedder: Embedder) -> Iterator[str]:
    """The same three people as semantic memories, and their knowledge graph."""
    tool = MemoryTool(user_id=f"{DEMO_USER}_graph", database=database, embedder=embedder)
    yield "\n=== 语义记忆与知识图谱 ==="
    tool.run("clear_all", confirm=True)
    for content, importance in PEOPLE:
        yield tool.run("add", content=content, memory_type="semantic", importance=importance)
    yield "\n--- 搜索 '前端工程师'（向量 × 0.7 + 图 × 0.3）---"
    for item in tool.memory_manager.retrieve_memories("前端工程师", memory_types=["semantic"], limit=3):
        meta = item.metadata
        yield (
            f"{item.content[:30]}  相关度 {meta['relevance_score']:.3f} = "
            f"(向量 {meta['vector_score']:.3f} × 0.7 + 图 {meta['graph_score']:.2f} × 0.3)"
            f" × 重要性权重 {meta['importance_weight']:.2f}"
        )
    for person in ("张三", "李四", "王五"):
        yield tool.run("graph", entity=person, depth=1)
    graph_state = "AGE 投影已同步" if database.graph_enabled else "未安装 AGE：图查询通过 SQL 完成"
    yield f"（{graph_state}）"


def rag_demo(database: Database, embedder: Embedder) -> Iterator[str]:
    """The three texts of the RAG seed demo, searched and counted."""
    tool = RAGTool(rag_namespace=DEMO_NAMESPACE, database=database, embedder=embedder)
    yield f"\n=== RAG 演示 (namespace: {DEMO_NAMESPACE}) ==="
    tool.run("clear", confirm=True)
    for document_id, text in KNOWLEDGE:
        yield tool.run({"action": "add_text", "text": text, "document_id": document_id})
    yield "\n--- 搜索 'Python编程语言的历史' ---"
    yield tool.run({"action": "search", "query": "Python编程语言的历史", "limit": 3, "min_score": 0.1})
    yield "\n--- 知识库统计 ---"
    yield tool.run({"action": "stats"})


def agent_demo(database: Database, embedder: Embedder) -> Iterator[str]:
    """Two agent instances sharing memory through the database (needs LLM_MODEL_ID)."""
    llm = create_chat_client(database.settings)
    yield "\n=== 智能体对话 ==="
    if llm is None:
        yield "（未配置 LLM_MODEL_ID：跳过智能体对话。配置任意 OpenAI 兼容模型后再运行 demo。）"
        return
    from hello_pgmem.agent import SimpleAgent
    from hello_pgmem.tools.base import ToolRegistry

    def agent() -> SimpleAgent:
        registry = ToolRegistry()
        registry.register_tool(MemoryTool(user_id=f"{DEMO_USER}_agent", database=database, embedder=embedder))
        return SimpleAgent("记忆助手", llm, tool_registry=registry)

    MemoryTool(user_id=f"{DEMO_USER}_agent", database=database, embedder=embedder).run(
        "clear_all", confirm=True
    )
    first = "你好！请记住我叫张三，我是一名Python开发者"
    yield f"用户（第一个智能体）: {first}"
    yield f"助手: {agent().run(first)}"
    yield "用户（新的智能体实例）: 我是谁？"
    yield f"助手: {agent().run('我是谁？')}"
