"""The ``memory`` tool: the MemoryManager for agents, with the reference's actions and output.

Every calling style of the references works: ``run({"action": "add", ...})``,
``run("add", content=...)``, ``execute("add", ...)``, and one tool per action
(``memory_add``, ``memory_search``, ...) with ``expandable=True``. The tool never raises to the
agent: problems come back as ``❌ …`` text naming the parameter and the rule. One deliberate
change from the reference: full ids on add, search and summary lines, and update/remove accept
a full id or a unique prefix of at least 8 characters, so an agent can act on what it found.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from hello_pgmem.db import Database
from hello_pgmem.embedding import Embedder
from hello_pgmem.memory.manager import MemoryManager
from hello_pgmem.models import MemoryConfig, MemoryItem, utcnow
from hello_pgmem.perceptual.encoders import infer_modality
from hello_pgmem.settings import Settings
from hello_pgmem.tools.base import ActionsTool, ToolText, tool_action

log = logging.getLogger(__name__)

LABELS = {
    "working": "工作记忆",
    "episodic": "情景记忆",
    "semantic": "语义记忆",
    "perceptual": "感知记忆",
}
DEFAULT_TYPES = ["working", "episodic", "semantic"]
CLEAR_ALL_WARNING = (
    "⚠️ 危险操作：将删除当前用户的所有记忆（所有类型与知识图谱），不可恢复！\n"
    "请使用 confirm=true 参数确认执行。"
)


def _preview(text: str, size: int) -> str:
    return text[:size] + "..." if len(text) > size else text


def memory_data(item: MemoryItem) -> dict[str, Any]:
    """A found memory as JSON: what the text line shows, in full."""
    return {
        "id": str(item.id),
        "memory_type": item.memory_type,
        "content": item.content,
        "importance": item.importance,
        "timestamp": item.timestamp.isoformat(),
        "score": item.score,
    }


def memory_line(item: MemoryItem, size: int) -> str:
    """One memory as the tool lists it: type label, preview, importance and full id."""
    label = LABELS.get(item.memory_type, item.memory_type)
    return f"[{label}] {_preview(item.content, size)} (重要性: {item.importance:.2f}) [ID: {item.id}]"


class MemoryTool(ActionsTool):
    """记忆工具 - 可以存储和检索对话历史、知识和经验"""

    def __init__(
        self,
        user_id: str = "default_user",
        memory_config: MemoryConfig | None = None,
        memory_types: list[str] | None = None,
        expandable: bool = False,
        *,
        database: Database | None = None,
        embedder: Embedder | None = None,
        settings: Settings | None = None,
        clock: Callable[[], datetime] | None = None,
        session_id: str | None = None,
    ) -> None:
        super().__init__("memory", "记忆工具 - 可以存储和检索对话历史、知识和经验", expandable)
        types = set(memory_types or DEFAULT_TYPES)
        self.current_session_id = session_id or f"session_{(clock or utcnow)().strftime('%Y%m%d_%H%M%S')}"
        self.conversation_count = 0
        self.memory_manager = MemoryManager.of_types(
            user_id,
            types,
            config=memory_config,
            database=database,
            embedder=embedder,
            settings=settings,
            session_id=self.current_session_id,
            clock=clock,
        )

    def failure(self, action: str, message: str) -> str:
        label = {
            "add": "添加记忆失败",
            "search": "搜索记忆失败",
            "summary": "获取摘要失败",
            "stats": "获取统计信息失败",
            "update": "更新记忆失败",
            "remove": "删除记忆失败",
            "forget": "遗忘记忆失败",
            "consolidate": "整合记忆失败",
            "clear_all": "清空记忆失败",
            "graph": "查询知识图谱失败",
        }.get(action, "操作失败")
        return f"❌ {label}: {message}"

    # ------------------------------------------------------------------ actions

    @tool_action("add", "添加记忆（working/episodic/semantic/perceptual）")
    def add(
        self,
        content: str,
        memory_type: str = "working",
        importance: float | None = None,
        file_path: str | None = None,
        modality: str | None = None,
        metadata: dict[str, Any] | None = None,
        timestamp: str | None = None,
        **extra: Any,
    ) -> str:
        """添加记忆

        Args:
            content: 记忆内容
            memory_type: 记忆类型 working、episodic、semantic 或 perceptual
            importance: 重要性 0-1，省略时自动估计
            file_path: 感知记忆的文件路径
            modality: 感知记忆的模态 text、image、audio、video（省略时按扩展名推断）
            metadata: 附加元数据（其余未知参数也会存入元数据）
            timestamp: 事件发生的时间，ISO 8601 且带时区（如 2023-05-08T13:56:00+08:00），
                长期记忆可用，省略时为现在
        """
        meta = {**(metadata or {}), **extra}
        if memory_type == "perceptual":
            if file_path:
                meta["file_path"] = file_path
            inferred = infer_modality(file_path) if file_path else "text"
            if modality or inferred:
                meta["modality"] = modality or inferred
        meta["session_id"] = self.current_session_id
        memory_id = self.memory_manager.add_memory(
            content, memory_type, importance, meta, timestamp=timestamp
        )
        return ToolText(f"✅ 记忆已添加 (ID: {memory_id})", {"id": str(memory_id)})

    @tool_action("search", "搜索相关记忆")
    def search(
        self,
        query: str,
        limit: int = 5,
        memory_type: str | None = None,
        memory_types: list[str] | None = None,
        min_importance: float = 0.1,
        target_modality: str | None = None,
        query_modality: str = "text",
    ) -> str:
        """搜索记忆

        Args:
            query: 搜索内容（query_modality 为 image/audio 时是文件路径）
            limit: 最多返回条数
            memory_type: 只搜索这一种记忆类型
            memory_types: 只搜索这些记忆类型
            min_importance: 最低重要性
            target_modality: 感知记忆只返回这种模态 text、image、audio、video
            query_modality: 查询的模态，默认 text
        """
        types = memory_types or ([memory_type] if memory_type else None)
        results = self.memory_manager.retrieve_memories(
            query,
            memory_types=types,
            limit=limit,
            min_importance=min_importance,
            target_modality=target_modality,
            query_modality=query_modality,
        )
        found = {"memories": [memory_data(item) for item in results]}
        if not results:
            return ToolText(f"🔍 未找到与 '{query}' 相关的记忆", found)
        lines = [f"🔍 找到 {len(results)} 条相关记忆:"]
        lines += [f"{i}. {memory_line(item, 80)}" for i, item in enumerate(results, 1)]
        return ToolText("\n".join(lines), found)

    @tool_action("summary", "记忆系统摘要")
    def summary(self, limit: int = 10) -> str:
        """获取记忆摘要

        Args:
            limit: 列出的重要记忆条数
        """
        stats = self.memory_manager.get_memory_stats()
        important = self.memory_manager.important_memories(limit=limit, min_importance=0.5)
        lines = [
            "📊 记忆系统摘要",
            f"总记忆数: {stats.total_memories}",
            f"当前会话: {self.current_session_id or '未开始'}",
            f"对话轮次: {self.conversation_count}",
            "",
            "📋 记忆类型分布:",
        ]
        for kind, type_stats in stats.memories_by_type.items():
            lines.append(
                f"  • {LABELS.get(kind, kind)}: {type_stats.count} 条 "
                f"(平均重要性: {type_stats.avg_importance:.2f}"
                + (
                    f", 当前会话 {type_stats.in_session} 条, 共 {type_stats.sessions_count} 个会话)"
                    if type_stats.in_session not in (None, type_stats.count)  # others' sessions too
                    else ")"
                )
            )
        if important:
            lines += ["", f"⭐ 重要记忆 (前{len(important)}条):"]
            lines += [
                f"  {i}. {_preview(item.content, 60)} (重要性: {item.importance:.2f}) [ID: {item.id}]"
                for i, item in enumerate(important, 1)
            ]
        return "\n".join(lines)

    @tool_action("stats", "记忆统计信息")
    def stats(self) -> str:
        """获取统计信息"""
        stats = self.memory_manager.get_memory_stats()
        return "\n".join(
            [
                "📈 记忆系统统计",
                f"总记忆数: {stats.total_memories}",
                f"启用的记忆类型: {', '.join(stats.enabled_types)}",
                f"会话ID: {self.current_session_id or '未开始'}",
                f"对话轮次: {self.conversation_count}",
            ]
        )

    @tool_action("update", "更新记忆")
    def update(self, memory_id: str, content: str | None = None, importance: float | None = None) -> str:
        """更新记忆

        Args:
            memory_id: 记忆ID（完整ID或至少8位的前缀）
            content: 新内容
            importance: 新重要性 0-1
        """
        uid = self.memory_manager.resolve_id(memory_id)
        if self.memory_manager.update_memory(uid, content=content, importance=importance):
            return "✅ 记忆已更新"
        return "⚠️ 未找到要更新的记忆"

    @tool_action("remove", "删除记忆")
    def remove(self, memory_id: str) -> str:
        """删除记忆

        Args:
            memory_id: 记忆ID（完整ID或至少8位的前缀）
        """
        uid = self.memory_manager.resolve_id(memory_id)
        if self.memory_manager.remove_memory(uid):
            return "✅ 记忆已删除"
        return "⚠️ 未找到要删除的记忆"

    @tool_action("forget", "按策略遗忘记忆")
    def forget(
        self,
        strategy: str = "importance_based",
        threshold: float = 0.1,
        max_age_days: int = 30,
        confirm: bool = False,
    ) -> str:
        """遗忘记忆

        Args:
            strategy: importance_based、time_based 或 capacity_based
            threshold: importance_based 的重要性阈值
            max_age_days: time_based 的最大天数
            confirm: 会遗忘全部记忆时（threshold 为 1 或 max_age_days 为 0）必须为 true
        """
        count = self.memory_manager.forget_memories(strategy, threshold, max_age_days, confirm=confirm)
        return f"🧹 已遗忘 {count} 条记忆（策略: {strategy}）"

    @tool_action("restore", "恢复被遗忘的长期记忆（maintain 清除之前）")
    def restore(self, memory_ids: list[str] | None = None) -> str:
        """恢复记忆

        Args:
            memory_ids: 要恢复的记忆ID，省略时恢复全部被遗忘的长期记忆
        """
        count = self.memory_manager.restore_memories(memory_ids)
        return f"♻️ 已恢复 {count} 条记忆"

    @tool_action("consolidate", "把重要的短期记忆整合为长期记忆")
    def consolidate(
        self,
        from_type: str = "working",
        to_type: str = "episodic",
        importance_threshold: float = 0.7,
    ) -> str:
        """整合记忆

        Args:
            from_type: 来源类型
            to_type: 目标类型
            importance_threshold: 重要性阈值
        """
        count = self.memory_manager.consolidate_memories(from_type, to_type, importance_threshold)
        return f"🔄 已整合 {count} 条记忆为长期记忆（{from_type} → {to_type}，阈值={importance_threshold}）"

    @tool_action("graph", "查询知识图谱：实体的关系网络、两个实体之间的路径、记忆中的实体")
    def graph(
        self,
        entity: str | None = None,
        depth: int = 1,
        target: str | None = None,
        memory_id: str | None = None,
    ) -> str:
        """查询知识图谱

        Args:
            entity: 实体名称（查询其关系网络与相关记忆）
            depth: 关系网络的深度 1-3
            target: 目标实体（与 entity 一起给出时，查询两者之间的最短路径）
            memory_id: 记忆ID（查询这条记忆中的实体）
        """
        manager = self.memory_manager
        if memory_id is not None:
            entities = manager.memory_entities(manager.resolve_id(memory_id))
            if not entities:
                return "🕸️ 这条记忆中没有识别出实体"
            return "🕸️ 记忆中的实体: " + ", ".join(f"{e.name}({e.entity_type})" for e in entities)
        if entity is None:
            return "❌ 参数错误: entity: 请给出 entity 或 memory_id"
        if target is not None:
            steps = manager.graph_path(entity, target)
            if not steps:
                return f"🕸️ 未找到 '{entity}' 与 '{target}' 之间的关系路径"
            chain = "; ".join(f"{s.source} —{s.relation_type}→ {s.target}" for s in steps)
            return f"🕸️ '{entity}' 到 '{target}' 的路径（{len(steps)} 步）: {chain}"
        hood = manager.graph_neighbourhood(entity, depth)
        lines = [f"🕸️ 实体 '{hood.entity}' 的关系网络（深度 {depth}）:"]
        lines.append("实体: " + ", ".join(f"{e.name}({e.entity_type})" for e in hood.entities))
        if hood.relations:
            lines.append("关系:")
            lines += [f"  {r.source} —{r.relation_type}→ {r.target}" for r in hood.relations]
        memories = manager.entity_memories(entity, limit=5)
        if memories:
            lines.append("相关记忆:")
            lines += [f"  {i}. {memory_line(item, 60)}" for i, item in enumerate(memories, 1)]
        return "\n".join(lines)

    @tool_action("clear_all", "清空当前用户的所有记忆（不可恢复，需要 confirm=true）")
    def clear_all(self, confirm: bool = False) -> str:
        """清空所有记忆

        Args:
            confirm: 必须为 true 才会执行：所有类型的记忆与知识图谱都会被删除，不可恢复
        """
        if confirm is not True:
            return CLEAR_ALL_WARNING
        self.memory_manager.clear_all()
        return "🧽 已清空所有记忆"

    # ------------------------------------------------------------------ helpers

    def close(self) -> None:
        self.memory_manager.close()
