"""What the ``memory`` tool says: memory lines, its summary, a graph neighbourhood, in English or
in the reference's Chinese."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from hello_pgmem.core.i18n import Language, say
from hello_pgmem.core.models import MemoryItem, MemoryStats
from hello_pgmem.graph.store import Neighbourhood
from hello_pgmem.memory import MemoryVersion, SessionHit

LABELS = {
    "zh": {"working": "工作记忆", "episodic": "情景记忆", "semantic": "语义记忆", "perceptual": "感知记忆"},
    "en": {"working": "working", "episodic": "episodic", "semantic": "semantic", "perceptual": "perceptual"},
}
CLEAR_ALL_WARNING = {
    "zh": "⚠️ 危险操作：将删除当前用户的所有记忆（所有类型与知识图谱），不可恢复！\n"
    "请使用 confirm=true 参数确认执行。",
    "en": "⚠️ Dangerous: this deletes every memory of the user (all types and the knowledge graph) for "
    "good.\nCall again with confirm=true to go ahead.",
}
FAILED = {
    "add": ("Adding the memory failed", "添加记忆失败"),
    "search": ("Searching memories failed", "搜索记忆失败"),
    "summary": ("The summary failed", "获取摘要失败"),
    "stats": ("The statistics failed", "获取统计信息失败"),
    "update": ("Updating the memory failed", "更新记忆失败"),
    "remove": ("Removing the memory failed", "删除记忆失败"),
    "history": ("Reading the memory's versions failed", "读取记忆版本失败"),
    "forget": ("Forgetting failed", "遗忘记忆失败"),
    "consolidate": ("Consolidation failed", "整合记忆失败"),
    "clear_all": ("Clearing the memories failed", "清空记忆失败"),
    "graph": ("The knowledge graph query failed", "查询知识图谱失败"),
}


def preview(text: str, size: int) -> str:
    return text[:size] + "..." if len(text) > size else text


def memory_data(item: MemoryItem) -> dict[str, Any]:
    """A found memory as JSON: what the text line shows, in full (``version_id`` as the command
    line's JSON has it: null unless the hit is an earlier version)."""
    return {
        "id": str(item.id),
        "memory_type": item.memory_type,
        "content": item.content,
        "importance": item.importance,
        "timestamp": item.timestamp.isoformat(),
        "session_id": item.session_id,
        "score": item.score,
        "components": item.components,
        "version_id": None if item.version_id is None else str(item.version_id),
    }


def memory_line(item: MemoryItem, size: int, language: Language = "en") -> str:
    """One memory as the tool lists it: type label, preview, importance and full id."""
    label = LABELS[language].get(item.memory_type, item.memory_type)
    importance = say(language, "importance", "重要性")
    line = f"[{label}] {preview(item.content, size)} ({importance}: {item.importance:.2f}) [ID: {item.id}]"
    if item.version_id is not None:
        line += say(language, f" (an earlier version: {item.version_id})", f"（早先版本: {item.version_id}）")
    return line


def history_lines(versions: list[MemoryVersion], language: Language) -> list[str]:
    """Every version of one memory, a line each (``*`` the current one): what it said, when that
    held, and when the store believed it."""
    held_word, known_word = say(language, "held", "成立"), say(language, "known", "记录")
    lines = []
    for v in versions:
        held = f"{v.valid_from.isoformat()} .. {v.valid_to.isoformat() if v.valid_to else ''}"
        known = f"{v.recorded_at.isoformat()} .. {v.superseded_at.isoformat() if v.superseded_at else ''}"
        lines.append(f"{'*' if v.current else ' '} {v.content}  ({held_word} {held}; {known_word} {known})")
    return lines


def history_text(memory_id: UUID, versions: list[MemoryVersion], language: Language) -> str:
    """:func:`history_lines` under a heading that names the memory (the tool's answer)."""
    heading = say(language, f"📜 Versions of memory {memory_id}:", f"📜 记忆 {memory_id} 的版本:")
    return "\n".join([heading, *history_lines(versions, language)])


def search_text(query: str, results: list[MemoryItem], language: Language) -> str:
    """What a search found, one line a memory."""
    if not results:
        return say(language, f"🔍 No memory matches '{query}'", f"🔍 未找到与 '{query}' 相关的记忆")
    lines = [
        say(
            language,
            f"🔍 Found {len(results)} related {'memory' if len(results) == 1 else 'memories'}:",
            f"🔍 找到 {len(results)} 条相关记忆:",
        )
    ]
    lines += [f"{i}. {memory_line(item, 80, language)}" for i, item in enumerate(results, 1)]
    return "\n".join(lines)


def sessions_text(query: str, sessions: list[SessionHit], language: Language) -> str:
    """The sessions a search found, each with its memories in order; the ones that matched marked ``*``."""
    if not sessions:
        return say(language, f"🗂️ No conversation matches '{query}'", f"🗂️ 未找到与 '{query}' 相关的对话")
    lines = [say(language, f"🗂️ Found {len(sessions)} conversations:", f"🗂️ 找到 {len(sessions)} 段相关对话:")]
    for i, found in enumerate(sessions, 1):
        hits = {m.id for m in found.hits}
        lines.append(
            say(
                language,
                f"{i}. Session {found.session_id} (score {found.score:.3f}, {len(hits)} matching):",
                f"{i}. 会话 {found.session_id}（得分 {found.score:.3f}，{len(hits)} 条匹配）:",
            )
        )
        lines += [
            f"   {'*' if m.id in hits else '-'} {memory_line(m, 120, language)}" for m in found.memories
        ]
    return "\n".join(lines)


def summary_text(
    stats: MemoryStats, important: list[MemoryItem], session: str, turns: int, language: Language
) -> str:
    """The counts by type (and by session, when others' sessions count too), then the most
    important memories."""
    lines = [
        say(language, "📊 Memory summary", "📊 记忆系统摘要"),
        say(language, f"Memories: {stats.total_memories}", f"总记忆数: {stats.total_memories}"),
        say(language, f"Current session: {session}", f"当前会话: {session}"),
        say(language, f"Turns: {turns}", f"对话轮次: {turns}"),
        "",
        say(language, "📋 By type:", "📋 记忆类型分布:"),
    ]
    for kind, s in stats.memories_by_type.items():
        label = LABELS[language].get(kind, kind)
        sessions = ")"
        if s.in_session not in (None, s.count):  # others' sessions too
            sessions = say(
                language,
                f", {s.in_session} in this session, {s.sessions_count} sessions)",
                f", 当前会话 {s.in_session} 条, 共 {s.sessions_count} 个会话)",
            )
        lines.append(
            say(
                language,
                f"  • {label}: {s.count} (average importance: {s.avg_importance:.2f}",
                f"  • {label}: {s.count} 条 (平均重要性: {s.avg_importance:.2f}",
            )
            + sessions
        )
    if important:
        lines += [
            "",
            say(language, f"⭐ Most important ({len(important)}):", f"⭐ 重要记忆 (前{len(important)}条):"),
        ]
        word = say(language, "importance", "重要性")
        lines += [
            f"  {i}. {preview(item.content, 60)} ({word}: {item.importance:.2f}) [ID: {item.id}]"
            for i, item in enumerate(important, 1)
        ]
    return "\n".join(lines)


def neighbourhood_text(
    hood: Neighbourhood, depth: int, memories: list[MemoryItem], language: Language, as_of: bool = False
) -> str:
    """An entity's entities and relations within ``depth``, and memories that mention it; when
    there are neither, that nothing was known of it (``as_of``: at the time asked about)."""
    lines = [
        say(
            language,
            f"🕸️ The relations of '{hood.entity}' (depth {depth}):",
            f"🕸️ 实体 '{hood.entity}' 的关系网络（深度 {depth}）:",
        )
    ]
    lines.append(
        say(language, "Entities: ", "实体: ") + ", ".join(f"{e.name}({e.entity_type})" for e in hood.entities)
    )
    if hood.relations:
        lines.append(say(language, "Relations:", "关系:"))
        lines += [f"  {r.source} —{r.relation_type}→ {r.target}" for r in hood.relations]
    if memories:
        lines.append(say(language, "Memories:", "相关记忆:"))
        lines += [f"  {i}. {memory_line(item, 60, language)}" for i, item in enumerate(memories, 1)]
    if not hood.relations and not memories:
        then_en, then_zh = (" then", "当时") if as_of else ("", "")
        lines.append(
            say(
                language,
                f"Nothing was known about '{hood.entity}'{then_en}: no relation, no memory.",
                f"{then_zh}没有关于 '{hood.entity}' 的关系或记忆。",
            )
        )
    return "\n".join(lines)


def stats_text(stats: MemoryStats, session: str, turns: int, language: Language) -> str:
    """The count of memories, the enabled types, the session and its turns."""
    types = ", ".join(stats.enabled_types)
    return "\n".join(
        [
            say(language, "📈 Memory statistics", "📈 记忆系统统计"),
            say(language, f"Memories: {stats.total_memories}", f"总记忆数: {stats.total_memories}"),
            say(language, f"Enabled types: {types}", f"启用的记忆类型: {types}"),
            say(language, f"Session: {session}", f"会话ID: {session}"),
            say(language, f"Turns: {turns}", f"对话轮次: {turns}"),
        ]
    )
