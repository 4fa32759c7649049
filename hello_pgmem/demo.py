"""The reference scenarios, end to end, as a readable report (``hello-pgmem demo``), in the
language of the database's settings: the reference's Chinese people and texts with ``zh``, the
same scenarios in English otherwise."""

from __future__ import annotations

from collections.abc import Iterator

from hello_pgmem.core.i18n import Language, say
from hello_pgmem.store import Store

DEMO_USER = "demo_user"
DEMO_NAMESPACE = "demo"
PEOPLE_EN = [
    ("The user Alice is a Python developer who works on machine learning and data analysis", 0.8),
    ("Bob is a frontend engineer and knows React and Vue.js", 0.7),
    ("Carol is a product manager and uses Figma for user experience design", 0.6),
]
KNOWLEDGE_EN = [
    (
        "python_intro",
        "Python is a high-level programming language, first released by Guido van Rossum in 1991. "
        "Its design philosophy stresses readable code and a concise syntax.",
    ),
    (
        "ml_basics",
        "Machine learning is a branch of artificial intelligence in which algorithms let computers "
        "learn patterns from data. Its main kinds are supervised, unsupervised and reinforcement learning.",
    ),
    (
        "rag_concept",
        "RAG (retrieval-augmented generation) is an AI technique that combines information retrieval "
        "with text generation: it retrieves relevant knowledge to strengthen a large language model.",
    ),
]
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


def full_demo(store: Store) -> Iterator[str]:
    """Every scenario; the agent conversation only when a chat model is configured."""
    yield from memory_demo(store)
    yield from graph_demo(store)
    yield from rag_demo(store)
    yield from agent_demo(store)


def people(language: Language) -> list[tuple[str, float]]:
    return PEOPLE if language == "zh" else PEOPLE_EN


def memory_demo(store: Store) -> Iterator[str]:
    """The memory-tool scenario of the reference for ``demo_user``."""
    tool = store.memory_tool(DEMO_USER)
    lang = tool.language
    query = say(lang, "frontend engineer", "前端工程师")
    model = tool.memory_manager.embedder.model_name
    yield say(
        lang,
        f"\n=== Memory tool (user: {DEMO_USER}, embeddings: {model}) ===",
        f"\n=== 记忆工具演示 (user: {DEMO_USER}, embeddings: {model}) ===",
    )
    yield tool.run("clear_all", confirm=True)
    yield say(lang, "\n--- Episodic memories ---", "\n--- 添加情景记忆 ---")
    for content, importance in people(lang):
        yield tool.run("add", content=content, memory_type="episodic", importance=importance)
    yield say(lang, f"\n--- Search '{query}' ---", f"\n--- 搜索 '{query}' ---")
    yield tool.run("search", query=query, limit=3)
    yield say(lang, "\n--- Working memory ---", "\n--- 工作记忆 ---")
    for content, importance in people(lang):
        yield tool.run("add", content=content, memory_type="working", importance=importance)
    yield tool.run("search", query=query, memory_type="working", limit=3)
    yield say(lang, "\n--- Summary ---", "\n--- 记忆摘要 ---")
    yield tool.run("summary", limit=3)
    yield say(
        lang,
        "\n--- Consolidate: important working memories → episodic (threshold 0.75) ---",
        "\n--- 整合: 重要的工作记忆 → 情景记忆 (阈值 0.75) ---",
    )
    yield tool.run("consolidate", from_type="working", to_type="episodic", importance_threshold=0.75)
    yield say(lang, "\n--- Forget: importance below 0.65 ---", "\n--- 遗忘: 重要性低于 0.65 的记忆 ---")
    yield tool.run("forget", strategy="importance_based", threshold=0.65)
    yield say(lang, "\n--- Statistics ---", "\n--- 统计 ---")
    yield tool.run("stats")


def graph_demo(store: Store) -> Iterator[str]:
    """The same three people as semantic memories, and their knowledge graph."""
    tool = store.memory_tool(f"{DEMO_USER}_graph")
    database = store.db
    lang = tool.language
    query = say(lang, "frontend engineer", "前端工程师")
    yield say(lang, "\n=== Semantic memory and the knowledge graph ===", "\n=== 语义记忆与知识图谱 ===")
    tool.run("clear_all", confirm=True)
    for content, importance in people(lang):
        yield tool.run("add", content=content, memory_type="semantic", importance=importance)
    yield say(
        lang,
        f"\n--- Search '{query}' by the chapter's semantic formula (vector × 0.7 + graph × 0.3) ---",
        f"\n--- 按原书的语义记忆公式搜索 '{query}'（向量 × 0.7 + 图 × 0.3）---",
    )
    found = tool.memory_manager.retrieve_memories(
        query, memory_types=["semantic"], limit=3, scoring="reference"
    )
    for item in found:
        parts = item.components
        relevance, vector, graph = item.score or 0.0, parts["vector_score"], parts["graph_score"]
        weight = parts["importance_weight"]
        yield say(
            lang,
            f"{item.content[:30]}  relevance {relevance:.3f} = (vector {vector:.3f} × 0.7 + graph "
            f"{graph:.2f} × 0.3) × importance weight {weight:.2f}",
            f"{item.content[:30]}  相关度 {relevance:.3f} = (向量 {vector:.3f} × 0.7 + 图 {graph:.2f} × 0.3)"
            f" × 重要性权重 {weight:.2f}",
        )
    for person in say(lang, "Alice Bob Carol", "张三 李四 王五").split():
        yield tool.run("graph", entity=person, depth=1)
    yield say(
        lang,
        "(the AGE projection is in step)" if database.graph_enabled else "(no AGE: graph queries run in SQL)",
        "（AGE 投影已同步）" if database.graph_enabled else "（未安装 AGE：图查询通过 SQL 完成）",
    )


def rag_demo(store: Store) -> Iterator[str]:
    """The three texts of the RAG seed demo, searched and counted."""
    tool = store.rag_tool(DEMO_NAMESPACE)
    lang = tool.language
    yield say(
        lang,
        f"\n=== RAG (namespace: {DEMO_NAMESPACE}) ===",
        f"\n=== RAG 演示 (namespace: {DEMO_NAMESPACE}) ===",
    )
    tool.run("clear", confirm=True)
    for document_id, text in KNOWLEDGE if lang == "zh" else KNOWLEDGE_EN:
        yield tool.run({"action": "add_text", "text": text, "document_id": document_id})
    query = say(lang, "the history of the Python programming language", "Python编程语言的历史")
    yield say(lang, f"\n--- Search '{query}' ---", f"\n--- 搜索 '{query}' ---")
    yield tool.run({"action": "search", "query": query, "limit": 3, "min_score": 0.1})
    yield say(lang, "\n--- Knowledge base statistics ---", "\n--- 知识库统计 ---")
    yield tool.run({"action": "stats"})


def agent_demo(store: Store) -> Iterator[str]:
    """Two agent instances sharing memory through the database (needs LLM_MODEL_ID)."""
    llm = store.llm
    lang = store.settings.language
    yield say(lang, "\n=== Agent conversation ===", "\n=== 智能体对话 ===")
    if llm is None:
        yield say(
            lang,
            "(LLM_MODEL_ID is not set: the agent conversation is skipped. Configure any "
            "OpenAI-compatible model and run the demo again.)",
            "（未配置 LLM_MODEL_ID：跳过智能体对话。配置任意 OpenAI 兼容模型后再运行 demo。）",
        )
        return
    from hello_pgmem.agent import SimpleAgent
    from hello_pgmem.tools.base import ToolRegistry

    def agent() -> SimpleAgent:
        registry = ToolRegistry(language=lang)
        registry.register_tool(store.memory_tool(f"{DEMO_USER}_agent"))
        return SimpleAgent(say(lang, "memory assistant", "记忆助手"), llm, tool_registry=registry)

    store.memory_tool(f"{DEMO_USER}_agent").run("clear_all", confirm=True)
    first = say(
        lang,
        "Hello! Please remember that my name is Alice and I am a Python developer",
        "你好！请记住我叫张三，我是一名Python开发者",
    )
    who = say(lang, "Who am I?", "我是谁？")
    yield say(lang, f"User (first agent): {first}", f"用户（第一个智能体）: {first}")
    reply = agent().run(first)
    yield say(lang, f"Assistant: {reply}", f"助手: {reply}")
    yield say(lang, f"User (a new agent instance): {who}", f"用户（新的智能体实例）: {who}")
    reply = agent().run(who)
    yield say(lang, f"Assistant: {reply}", f"助手: {reply}")
