"""What the ``rag`` tool says: its reports of ingests, hits, answers, statistics and documents,
in English or in the reference's Chinese."""

from __future__ import annotations

from pathlib import Path

from hello_pgmem.core.i18n import Language, say
from hello_pgmem.rag.answer import Answer
from hello_pgmem.rag.models import ChunkHit, DocumentInfo, IngestResult, KnowledgeStats
from hello_pgmem.tools.base import ToolText

NO_ANSWER = {
    "zh": "🤔 抱歉，我在知识库中没有找到与「{q}」相关的信息。\n\n💡 建议：\n• 尝试使用更简洁的关键词\n"
    "• 检查是否已添加相关文档\n• 使用 stats 操作查看知识库状态",
    "en": "🤔 Sorry, the knowledge base has nothing about '{q}'.\n\n💡 Try:\n• fewer, plainer keywords\n"
    "• checking that the documents were added\n• the stats action, to see what the knowledge base holds",
}
CLEAR_WARNING = {
    "zh": "⚠️ 危险操作：清空知识库将删除所有数据！\n请使用 confirm=true 参数确认执行。",
    "en": "⚠️ Dangerous: clearing the knowledge base deletes all of its data!\nCall again with confirm=true "
    "to go ahead.",
}


def ingested(language: Language, document: bool, name: str, result: IngestResult, namespace: str) -> str:
    """The report of an ingested document or text, as the reference words it."""
    if language == "zh":
        kind = "文档" if document else "文本"
        head = f"✅ {kind}已添加到知识库" if result.status != "unchanged" else f"✅ {kind}未变化，已跳过"
        return (
            f"{head}: {name}\n📊 分块数量: {result.chunks}\n⏱️ 处理时间: {result.elapsed_ms}ms\n"
            f"📝 命名空间: {namespace}"
        )
    kind = "Document" if document else "Text"
    head = (
        f"✅ {kind} added to the knowledge base"
        if result.status != "unchanged"
        else f"✅ {kind} unchanged, skipped"
    )
    took = result.elapsed_ms
    return f"{head}: {name}\n📊 Chunks: {result.chunks}\n⏱️ Took: {took}ms\n📝 Namespace: {namespace}"


def ingest_report(results: list[IngestResult], namespace: str, language: Language = "en") -> ToolText:
    """Files and folders ingested: a count, a line per file, and the reason of every file skipped
    or failed; not ``ok`` when every file failed."""
    undone = [r for r in results if r.status in ("skipped", "failed")]
    failed = sum(r.status == "failed" for r in results)
    skipped = len(undone) - failed
    ok = not results or failed < len(results)
    mark = "✅" if not undone else "⚠️" if ok else "❌"  # a success mark only on a success
    head = say(
        language,
        f"{mark} {len(results)} files, {skipped} skipped, {failed} failed (namespace {namespace})",
        f"{mark} 已处理 {len(results)} 个文件，跳过 {skipped} 个，失败 {failed} 个（命名空间 {namespace}）",
    )
    lines = [f"{r.status}: {r.source_path or r.document_id} ({r.chunks} chunks)" for r in results]
    text = "\n".join([head, *lines, *(f"  {r.status}: {r.error}" for r in undone)])
    files = [
        {"path": r.source_path or r.document_id, "status": r.status, "chunks": r.chunks, "error": r.error}
        for r in results
    ]
    return ToolText(text, {"namespace": namespace, "files": files}, ok=ok)


def hits_text(hits: list[ChunkHit], include_citations: bool, language: Language) -> str:
    """Found passages: document, similarity and score, the start of the text, its section."""
    lines = [say(language, "Results:", "搜索结果：")]
    for i, hit in enumerate(hits, 1):
        where = hit.source_path or hit.document_id
        lines.append(
            say(
                language,
                f"\n{i}. Document: **{where}** (similarity: {hit.vector_score:.3f}, score: {hit.score:.3f})",
                f"\n{i}. 文档: **{where}** (相似度: {hit.vector_score:.3f}, 排序得分: {hit.score:.3f})",
            )
        )
        lines.append(f"   {hit.content[:200]}...")
        if include_citations and hit.heading_path:
            lines.append(say(language, "   Section: ", "   章节: ") + " > ".join(hit.heading_path))
    return "\n".join(lines)


def answer_text(answer: Answer, include_citations: bool, elapsed_ms: int, language: Language) -> str:
    """An answer (or the passages instead of one), its sources and how long it took."""
    lines = [say(language, "🤖 **Answer**", "🤖 **智能问答结果**"), ""]
    lines.append(answer.answer if answer.answer is not None else f"{answer.notice}\n\n{answer.context}")
    if include_citations:
        lines += ["", say(language, "📚 **Sources**", "📚 **参考来源**")]
        for source in answer.sources:
            mark = "🟢" if source.similarity > 0.8 else "🟡" if source.similarity > 0.6 else "🔵"
            where = " > ".join(source.heading_path)
            name = Path(source.source_path).name if source.source_path else source.document_id
            scores = say(
                language,
                f"(similarity: {source.similarity:.3f}, score: {source.score:.3f})",
                f"(相似度: {source.similarity:.3f}, 排序得分: {source.score:.3f})",
            )
            lines.append(f"{mark} [{source.number}] {name}{' — ' + where if where else ''} {scores}")
    average = sum(s.similarity for s in answer.sources) / len(answer.sources)
    lines.append(
        say(
            language,
            f"\n⚡ Took: {elapsed_ms}ms | average similarity: {average:.3f}",
            f"\n⚡ 用时: {elapsed_ms}ms | 平均相似度: {average:.3f}",
        )
    )
    return "\n".join([*lines, *answer.notes])


def stats_text(stats: KnowledgeStats, schema: str, configured: bool, language: Language) -> str:
    """The knowledge base's statistics and status; ``configured`` when a chat model is."""
    if language == "zh":
        lines = [
            "📊 **RAG 知识库统计**",
            f"📝 命名空间: {stats.namespace}",
            f"📦 存储: PostgreSQL 模式 {schema}（documents、chunks 表，pgvector）",
            f"📄 文档数: {stats.documents}",
            f"📊 文档分块数: {stats.chunks}",
            f"🔢 向量维度: {stats.dimension} ({stats.embedding_model})",
            "📎 距离度量: Cosine",
            "",
            "🟢 **系统状态**",
            "✅ RAG 管道: 正常",
            "✅ LLM 连接: 已配置" if configured else "⚪ LLM 连接: 未配置（ask 返回原文片段）",
        ]
    else:
        lines = [
            "📊 **RAG knowledge base**",
            f"📝 Namespace: {stats.namespace}",
            f"📦 Storage: PostgreSQL schema {schema} (tables documents, chunks; pgvector)",
            f"📄 Documents: {stats.documents}",
            f"📊 Chunks: {stats.chunks}",
            f"🔢 Vector dimension: {stats.dimension} ({stats.embedding_model})",
            "📎 Distance: cosine",
            "",
            "🟢 **Status**",
            "✅ RAG pipeline: working",
            "✅ Chat model: configured"
            if configured
            else "⚪ Chat model: not configured (ask returns the passages)",
        ]
    return "\n".join(lines)


def documents_text(namespace: str, documents: list[DocumentInfo], language: Language) -> str:
    """The documents of a namespace, one line each."""
    if not documents:
        return say(
            language, f"📚 Namespace {namespace} has no document yet", f"📚 命名空间 {namespace} 中还没有文档"
        )
    lines = [
        say(
            language,
            f"📚 Documents (namespace: {namespace}, {len(documents)} in all):",
            f"📚 知识库文档（命名空间: {namespace}，共 {len(documents)} 个）:",
        )
    ]
    lines += [
        say(
            language,
            f"{i}. {d.id} — {d.chunks} chunks, {d.tokens} tokens, updated {d.updated_at[:19]}",
            f"{i}. {d.id} — {d.chunks} 块, {d.tokens} tokens, 更新于 {d.updated_at[:19]}",
        )
        for i, d in enumerate(documents, 1)
    ]
    return "\n".join(lines)
