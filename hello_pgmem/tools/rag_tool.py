"""The ``rag`` tool: a KnowledgeBase for agents, with the reference's actions and output.

Actions: add_document, add_text, search, ask, stats, list_documents, remove_document, clear.
``namespace`` defaults to the tool's ``rag_namespace`` (the reference used "default" whatever the
tool was given); ``clear`` empties that namespace only. Errors come back as ``❌ …`` text
(a ``ToolText`` whose ``ok`` is False). It
speaks English or, with ``language="zh"`` (or ``PGMEM_LANGUAGE=zh``), the reference's Chinese.
Optionally, passages found by search or ask are stored as semantic memories of a user
(``memory_tool=...``, ``remember_passages=True``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from hello_pgmem.core.compat import accepted_without_effect
from hello_pgmem.core.errors import InvalidInputError, no_such
from hello_pgmem.core.i18n import Language
from hello_pgmem.core.settings import Settings
from hello_pgmem.db import Database, SharesDatabase
from hello_pgmem.embedding import Embedder, create_embedder
from hello_pgmem.llm import ChatClient, create_chat_client
from hello_pgmem.rag.chunking import ChunkOverlap, ChunkSize
from hello_pgmem.rag.knowledge import MAX_TOP_K, KnowledgeBase
from hello_pgmem.rag.models import ChunkHit
from hello_pgmem.tools.base import ActionsTool, ToolText, failed, tool_action
from hello_pgmem.tools.files import FilesRoot, confined
from hello_pgmem.tools.files import files_root as files_root_of
from hello_pgmem.tools.memory_tool import MemoryTool
from hello_pgmem.tools.params import AnswerChars, Confirm, Listed, Passages
from hello_pgmem.tools.rag_text import (
    CLEAR_WARNING,
    NO_ANSWER,
    answer_text,
    documents_text,
    hits_text,
    ingested,
    stats_text,
)

log = logging.getLogger(__name__)

DESCRIPTION = {
    "en": "Knowledge base tool - add documents, retrieve knowledge and answer questions from the "
    "knowledge base",
    "zh": "知识库工具 - 添加文档、检索知识并基于知识库回答问题",
}
REMEMBER_MIN_SCORE = 0.6


def _check_limit(limit: int) -> int:
    """The tool's ``limit`` is the knowledge base's ``top_k``: checked here to name the tool's field."""
    if not 1 <= limit <= MAX_TOP_K:
        raise InvalidInputError("limit", f"must be between 1 and {MAX_TOP_K}")
    return limit


class RAGTool(ActionsTool, SharesDatabase):
    """The knowledge base tool: add documents, retrieve knowledge, answer with citations."""

    def __init__(
        self,
        knowledge_base_path: str = "./knowledge_base",
        rag_namespace: str = "default",
        expandable: bool = False,
        *,
        collection_name: str | None = None,
        database: Database | None = None,
        embedder: Embedder | None = None,
        settings: Settings | None = None,
        llm: ChatClient | None = None,
        memory_tool: MemoryTool | None = None,
        remember_passages: bool = False,
        clock: Callable[[], float] = time.perf_counter,
        namespaces: Collection[str] | None = None,
        user_id: str | None = None,
        files_root: FilesRoot = None,
        language: Language | None = None,
    ) -> None:
        """``namespaces`` limits which namespaces an agent may name (default: any, as the
        reference); give it when the tool serves one tenant, so ``namespace=`` cannot reach
        another's documents. ``user_id`` is who asks: the retrieval log files its questions under
        that user. ``add_document`` reads files only beneath ``files_root`` (relative names looked
        for there, then in ``knowledge_base_path`` when that lies inside it; no link followed out):
        by default the working directory, none when False (:func:`~hello_pgmem.rag.files.files_root`),
        since the file names come from a model. ``language`` is the tool's (default:
        ``PGMEM_LANGUAGE``, English unless set). ``collection_name`` (the reference's vector
        store collection) is accepted and has no effect: the namespace is the collection."""
        if collection_name is not None:
            accepted_without_effect("RAGTool(collection_name=...)", "the namespace is the collection")
        self.settings = settings or (database.settings if database else Settings())
        tongue: Language = language or self.settings.language
        super().__init__("rag", DESCRIPTION[tongue], expandable, tongue)
        self.knowledge_base_path = Path(knowledge_base_path)
        self.rag_namespace = rag_namespace
        self.db, self._owns_db = Database.shared(database, self.settings)
        self._embedder = embedder
        self.llm = llm if llm is not None else create_chat_client(self.settings)
        self.memory_tool = memory_tool
        self.remember_passages = remember_passages
        self.user_id = user_id
        self.files_root = files_root_of(files_root)
        self.clock = clock
        self._bases: dict[str, KnowledgeBase] = {}
        self.namespaces = None if namespaces is None else frozenset({rag_namespace, *namespaces})

    def bounds(self) -> dict[str, dict[str, Any]]:
        return {} if self.namespaces is None else {"namespace": {"enum": sorted(self.namespaces)}}

    def knowledge_base(self, namespace: str | None = None) -> KnowledgeBase:
        name = namespace or self.rag_namespace
        if self.namespaces is not None and name not in self.namespaces:
            raise InvalidInputError("namespace", f"must be one of {', '.join(sorted(self.namespaces))}")
        if name not in self._bases:
            if self._embedder is None:
                self._embedder = create_embedder(self.settings)
            self._bases[name] = KnowledgeBase(
                self.db, self._embedder, name, llm=self.llm, asked_by=self.user_id, language=self.language
            )
        return self._bases[name]

    def _find_file(self, file_path: str) -> Path | None:
        """The file, beneath the files root: in it, or in the knowledge-base folder inside it;
        None when neither has it."""
        return confined(self.files_root, file_path, self.knowledge_base_path)

    # ------------------------------------------------------------------ actions

    @tool_action(
        "add_document",
        "Add a file (Markdown, PDF, Word, Excel, HTML, …) to the knowledge base",
        zh="把文件（Markdown、PDF、Word、Excel、HTML 等）加入知识库",
    )
    def add_document(
        self,
        file_path: str,
        document_id: str | None = None,
        namespace: str | None = None,
        chunk_size: ChunkSize = 800,
        chunk_overlap: ChunkOverlap = 100,
    ) -> str:
        """Add a document.

        Args:
            file_path: the file's path, inside the folder the tool may read (by default the
                working directory); a relative one is looked for there, then in the knowledge
                base's folder
                zh: 文件路径，须在工具可读的目录内（默认为当前目录）；
                相对路径先在该目录找，再在知识库目录找
            document_id: the document's id, the file path when left out
                zh: 文档ID，省略时用文件路径
            namespace: the namespace, the tool's by default
                zh: 命名空间，默认是工具的命名空间
            chunk_size: the size of a chunk (tokens)
                zh: 分块大小（token）
            chunk_overlap: the overlap of chunks (tokens)
                zh: 分块重叠（token）
        """
        path = self._find_file(file_path)
        if path is None:
            return failed(
                self.say(f"❌ No such file: {file_path[:200]}", f"❌ 文件不存在: {file_path[:200]}")
            )
        kb = self.knowledge_base(namespace)
        result = kb.add_document(
            path,
            file_path[-255:] if document_id is None else document_id,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            root=self.files_root,
        )
        if result.chunks == 0:
            return self.say(f"⚠️ No text could be read from {path.name}", f"⚠️ 未能从文件解析内容: {path.name}")
        return ingested(self.language, True, path.name, result, kb.namespace)

    @tool_action("add_text", "Add a text to the knowledge base", zh="把一段文本加入知识库")
    def add_text(
        self,
        text: str,
        document_id: str | None = None,
        namespace: str | None = None,
        chunk_size: ChunkSize = 800,
        chunk_overlap: ChunkOverlap = 100,
    ) -> str:
        """Add a text.

        Args:
            text: the text (Markdown)
                zh: 文本内容（支持 Markdown）
            document_id: the document's id, made from the text when left out; adding the same id
                again replaces the old text
                zh: 文档ID，省略时由内容生成；相同ID再次添加会替换旧内容
            namespace: the namespace, the tool's by default
                zh: 命名空间，默认是工具的命名空间
            chunk_size: the size of a chunk (tokens)
                zh: 分块大小（token）
            chunk_overlap: the overlap of chunks (tokens)
                zh: 分块重叠（token）
        """
        if not text.strip():
            return failed(self.say("❌ text: must not be empty", "❌ 文本内容不能为空"))
        kb = self.knowledge_base(namespace)
        result = kb.add_text(text, document_id, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
        if result.chunks == 0:
            return self.say("⚠️ The text gave no chunk", "⚠️ 未能从文本生成有效分块")
        return ingested(self.language, False, result.document_id, result, kb.namespace)

    @tool_action("search", "Search the knowledge base for related passages", zh="在知识库中检索相关片段")
    def search(
        self,
        query: str | None = None,
        question: str | None = None,
        limit: Passages = 5,
        min_score: float = 0.1,
        enable_advanced_search: bool = False,
        include_citations: bool = True,
        namespace: str | None = None,
        document_ids: list[str] | None = None,
    ) -> str:
        """Search the knowledge base.

        Args:
            query: what to search for
                zh: 搜索内容
            question: another name of query
                zh: query 的别名
            limit: the most passages to return
                zh: 最多返回条数
            min_score: the lowest similarity (cosine)
                zh: 最低相似度（余弦）
            enable_advanced_search: MQE and HyDE query expansion (needs a chat model)
                zh: 启用 MQE 与 HyDE 查询扩展（需要大语言模型）
            include_citations: show the sections
                zh: 显示章节
            namespace: the namespace, the tool's by default
                zh: 命名空间，默认是工具的命名空间
            document_ids: search these documents only
                zh: 只在这些文档中搜索
        """
        if query is not None and question is not None and query != question:
            return self.bad_input("question: another name of query; give one of them")
        text = (query or question or "").strip()
        if not text:
            return failed(self.say("❌ query: must not be empty", "❌ 搜索查询不能为空"))
        hits = self.knowledge_base(namespace).search(
            text,
            _check_limit(limit),
            min_score=min_score or None,
            document_ids=document_ids,
            enable_mqe=enable_advanced_search,
            enable_hyde=enable_advanced_search,
        )
        notes = hits.notes(self.language)
        found = {
            "chunks": [hit.model_dump(mode="json") for hit in hits],
            "pending_embeddings": hits.pending_embeddings,
            "notes": notes,
        }
        if not hits:
            nothing = self.say(f"🔍 Nothing matches '{text}'", f"🔍 未找到与 '{text}' 相关的内容")
            return ToolText("\n".join([nothing, *notes]), found)
        self._remember(hits)
        return ToolText("\n".join([hits_text(hits, include_citations, self.language), *notes]), found)

    @tool_action(
        "ask", "Answer a question from the knowledge base, with citations", zh="基于知识库回答问题并给出引用"
    )
    def ask(
        self,
        question: str | None = None,
        query: str | None = None,
        limit: Passages = 5,
        enable_advanced_search: bool = False,
        include_citations: bool = True,
        max_chars: AnswerChars = 1200,
        namespace: str | None = None,
    ) -> str:
        """Answer a question.

        Args:
            question: the question
                zh: 问题
            query: another name of question
                zh: question 的别名
            limit: how many passages to retrieve
                zh: 检索的片段数
            enable_advanced_search: MQE and HyDE query expansion
                zh: 启用 MQE 与 HyDE 查询扩展
            include_citations: list the sources
                zh: 列出参考来源
            max_chars: the most characters of context given to the model
                zh: 提供给模型的上下文最大字符数
            namespace: the namespace, the tool's by default
                zh: 命名空间，默认是工具的命名空间
        """
        if query is not None and question is not None and query != question:
            return self.bad_input("query: another name of question; give one of them")
        text = (question or query or "").strip()
        if not text:
            return failed(self.say("❌ question: must not be empty", "❌ 问题不能为空"))
        started = self.clock()
        kb = self.knowledge_base(namespace)
        answer = kb.ask(
            text,
            _check_limit(limit),
            max_chars=max_chars,
            enable_mqe=enable_advanced_search,
            enable_hyde=enable_advanced_search,
        )
        elapsed = int((self.clock() - started) * 1000)
        if not answer.sources:
            return NO_ANSWER[self.language].format(q=text)
        return answer_text(answer, include_citations, elapsed, self.language)

    @tool_action("stats", "Statistics of the knowledge base", zh="知识库统计信息")
    def stats(self, namespace: str | None = None) -> str:
        """Knowledge base statistics.

        Args:
            namespace: the namespace, the tool's by default
                zh: 命名空间，默认是工具的命名空间
        """
        stats = self.knowledge_base(namespace).stats()
        return stats_text(stats, self.settings.schema_name, self.llm is not None, self.language)

    @tool_action("list_documents", "List the documents of the knowledge base", zh="列出知识库中的文档")
    def list_documents(self, namespace: str | None = None, limit: Listed = 50) -> str:
        """List documents.

        Args:
            namespace: the namespace, the tool's by default
                zh: 命名空间，默认是工具的命名空间
            limit: the most documents to list
                zh: 最多列出多少个
        """
        kb = self.knowledge_base(namespace)
        return documents_text(kb.namespace, kb.list_documents(limit), self.language)

    @tool_action("remove_document", "Remove a document from the knowledge base", zh="从知识库删除一个文档")
    def remove_document(self, document_id: str, namespace: str | None = None) -> str:
        """Remove a document.

        Args:
            document_id: the document's id
                zh: 文档ID
            namespace: the namespace, the tool's by default
                zh: 命名空间，默认是工具的命名空间
        """
        if self.knowledge_base(namespace).remove_document(document_id):
            return self.say(f"✅ Document removed: {document_id}", f"✅ 文档已删除: {document_id}")
        raise no_such("document", document_id, self.language)

    @tool_action("clear", "Empty the knowledge base of one namespace", zh="清空一个命名空间的知识库")
    def clear(self, confirm: Confirm = False, namespace: str | None = None) -> str:
        """Clear the knowledge base.

        Args:
            confirm: must be true to go ahead
                zh: 必须为 true 才会执行
            namespace: the namespace, the tool's by default
                zh: 命名空间，默认是工具的命名空间
        """
        if not confirm:
            return CLEAR_WARNING[self.language]
        kb = self.knowledge_base(namespace)
        kb.clear()
        return self.say(
            f"✅ The knowledge base was cleared (namespace: {kb.namespace})",
            f"✅ 知识库已成功清空（命名空间：{kb.namespace}）",
        )

    # ------------------------------------------------------------------ helpers

    def _remember(self, hits: list[ChunkHit]) -> None:
        """Store strong passages as semantic memories of the memory tool's user (once each)."""
        if not (self.remember_passages and self.memory_tool is not None):
            return
        manager = self.memory_tool.memory_manager
        for hit in hits:
            if hit.vector_score < REMEMBER_MIN_SCORE or manager.find_by_metadata("chunk_id", str(hit.id)):
                continue
            manager.add_memory(
                hit.content[:2000],
                "semantic",
                0.6,
                {
                    "source": "rag",
                    "namespace": self.rag_namespace,
                    "document_id": hit.document_id,
                    "chunk_id": str(hit.id),
                },
            )
