"""The ``memory`` tool: the MemoryManager for agents, with the reference's actions and output.

Every calling style of the references works: ``run({"action": "add", ...})``,
``run("add", content=...)``, ``execute("add", ...)``, and one tool per action
(``memory_add``, ``memory_search``, ...) with ``expandable=True``. The tool never raises to the
agent: problems come back as ``❌ …`` text naming the parameter and the rule, a ``ToolText``
whose ``ok`` is False. It speaks English
or, with ``language="zh"`` (or ``PGMEM_LANGUAGE=zh``), the reference's Chinese. One deliberate
change from the reference: full ids on add, search and summary lines, and update/remove accept
a full id or a unique prefix of at least 8 characters, so an agent can act on what it found.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from hello_pgmem.core.errors import no_such
from hello_pgmem.core.i18n import Language
from hello_pgmem.core.models import DEFAULT_TYPES, MemoryConfig, check_modality, utcnow
from hello_pgmem.core.settings import Settings
from hello_pgmem.db import Database
from hello_pgmem.embedding import Embedder
from hello_pgmem.memory import MemoryManager
from hello_pgmem.tools.base import ToolText, failed, tool_action
from hello_pgmem.tools.files import FilesRoot, media_metadata
from hello_pgmem.tools.files import files_root as files_root_of
from hello_pgmem.tools.memory_reading import ReadingActions
from hello_pgmem.tools.memory_text import (
    CLEAR_ALL_WARNING,
    FAILED,
    history_text,
    memory_data,
    search_text,
    stats_text,
    summary_text,
)
from hello_pgmem.tools.params import (
    Confirm,
    Count,
    Days,
    Fraction,
    MemoryTypeName,
    MemoryTypeNames,
    ModalityName,
    OptionalFraction,
    OptionalMemoryType,
    OptionalModality,
    Strategy,
)

log = logging.getLogger(__name__)

DESCRIPTION = {
    "en": "Memory tool - store and retrieve conversation history, knowledge and experience",
    "zh": "记忆工具 - 可以存储和检索对话历史、知识和经验",
}


def new_session_id(clock: Callable[[], datetime] | None = None) -> str:
    """The tool's session id when none is given: ``session_`` and the time, to the second."""
    return f"session_{(clock or utcnow)().strftime('%Y%m%d_%H%M%S')}"


class MemoryTool(ReadingActions):
    """The memory tool: store and retrieve conversation history, knowledge and experience."""

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
        language: Language | None = None,
        manager: MemoryManager | None = None,
        files_root: FilesRoot = None,
    ) -> None:
        """``language`` is the tool's (default: ``PGMEM_LANGUAGE``, English unless set). With
        ``manager`` the tool works through that user's memory (``Store.memory_tool`` gives one).
        A perceptual memory's file is read only beneath ``files_root``: by default the working
        directory, none when False (:func:`~hello_pgmem.rag.files.files_root`), since the file
        names come from a model."""
        settings = manager.settings if manager else settings or (database.settings if database else None)
        tongue: Language = language or (settings.language if settings else Settings().language)
        super().__init__("memory", DESCRIPTION[tongue], expandable, tongue)
        self.conversation_count = 0
        self.files_root = files_root_of(files_root)
        self.current_session_id = (manager.session_id if manager else session_id) or new_session_id(clock)
        self.memory_manager = manager or MemoryManager.of_types(
            user_id,
            set(memory_types or DEFAULT_TYPES),
            config=memory_config,
            database=database,
            embedder=embedder,
            settings=settings,
            session_id=self.current_session_id,
            clock=clock,
        )

    def bounds(self) -> dict[str, dict[str, Any]]:
        return {"limit": {"maximum": self.memory_manager.config.max_search_limit}}

    def failure(self, action: str, message: str) -> str:
        label = self.say(*FAILED.get(action, ("The action failed", "操作失败")))
        return failed(f"❌ {label}: {message}")

    # ------------------------------------------------------------------ actions

    @tool_action(
        "add",
        "Add a memory (working/episodic/semantic/perceptual)",
        zh="添加记忆（working/episodic/semantic/perceptual）",
    )
    def add(
        self,
        content: str,
        memory_type: MemoryTypeName = "working",
        importance: OptionalFraction = None,
        file_path: str | None = None,
        modality: OptionalModality = None,
        metadata: dict[str, Any] | None = None,
        timestamp: str | None = None,
        **extra: Any,
    ) -> str:
        """Add a memory.

        Args:
            content: the memory's text
                zh: 记忆内容
            memory_type: the memory type: working, episodic, semantic or perceptual
                zh: 记忆类型 working、episodic、semantic 或 perceptual
            importance: importance 0-1, estimated when left out
                zh: 重要性 0-1，省略时自动估计
            file_path: the file of a perceptual memory, inside the folder the tool may read (by
                default the working directory)
                zh: 感知记忆的文件路径，须在工具可读的目录内（默认为当前目录）
            modality: a perceptual memory's modality: text, image, audio or video (left out: from
                the file's extension)
                zh: 感知记忆的模态 text、image、audio、video（省略时按扩展名推断）
            metadata: more metadata (unknown parameters are stored in it too)
                zh: 附加元数据（其余未知参数也会存入元数据）
            timestamp: when the event happened, ISO 8601 with a time zone (such as
                2023-05-08T13:56:00+08:00), for long-term memories; now when left out
                zh: 事件发生的时间，ISO 8601 且带时区（如 2023-05-08T13:56:00+08:00），
                长期记忆可用，省略时为现在
        """
        meta = {**(metadata or {}), **extra}
        if modality is not None:
            check_modality(modality)
        if memory_type in self.memory_manager.enabled_types:  # else add_memory names the type
            meta.update(media_metadata(memory_type, file_path, modality, self.files_root))
        memory_id = self.memory_manager.add_memory(
            content, memory_type, importance, meta, timestamp=timestamp, session_id=self.current_session_id
        )
        text = self.say(f"✅ Memory added (ID: {memory_id})", f"✅ 记忆已添加 (ID: {memory_id})")
        if extra:  # said, so that a misspelt parameter is not taken for metadata unnoticed
            names = ", ".join(sorted(extra))
            text += self.say(f"; kept in its metadata: {names}", f"；以下参数已存入元数据: {names}")
        return ToolText(text, {"id": str(memory_id), **({"metadata": sorted(extra)} if extra else {})})

    @tool_action("search", "Search related memories", zh="搜索相关记忆")
    def search(
        self,
        query: str,
        limit: Count = 5,
        memory_type: OptionalMemoryType = None,
        memory_types: MemoryTypeNames = None,
        min_importance: Fraction = 0.1,
        target_modality: OptionalModality = None,
        query_modality: ModalityName = "text",
        valid_at: str | None = None,
        known_at: str | None = None,
    ) -> str:
        """Search memories.

        Args:
            query: what to search for (a file path when query_modality is image or audio)
                zh: 搜索内容（query_modality 为 image/audio 时是文件路径）
            limit: the most memories to return
                zh: 最多返回条数
            memory_type: search this memory type only
                zh: 只搜索这一种记忆类型
            memory_types: search these memory types only
                zh: 只搜索这些记忆类型
            min_importance: the lowest importance
                zh: 最低重要性
            target_modality: perceptual memories of this modality only: text, image, audio, video
                zh: 感知记忆只返回这种模态 text、image、audio、video
            query_modality: the query's modality, text by default
                zh: 查询的模态，默认 text
            valid_at: what held at this time (ISO 8601 with an offset), now by default
                zh: 查询在这一时刻成立的事实（带时区的 ISO 8601），默认为现在
            known_at: as the memory knew it at this time (ISO 8601 with an offset), now by default
                zh: 按记忆在这一时刻所知的内容（带时区的 ISO 8601），默认为现在
        """
        types = memory_types or ([memory_type] if memory_type else None)
        results = self.memory_manager.retrieve_memories(
            query,
            memory_types=types,
            limit=limit,
            min_importance=min_importance,
            target_modality=target_modality,
            query_modality=query_modality,
            valid_at=valid_at,
            known_at=known_at,
        )
        found = [memory_data(item) for item in results]
        notes = results.notes(self.language)
        data = {"memories": found, "pending_embeddings": results.pending_embeddings, "notes": notes}
        return ToolText("\n".join([search_text(query, results, self.language), *notes]), data)

    @tool_action("summary", "Summary of the memory system", zh="记忆系统摘要")
    def summary(self, limit: Count = 10) -> str:
        """A summary of the memories.

        Args:
            limit: how many important memories to list
                zh: 列出的重要记忆条数
        """
        stats = self.memory_manager.get_memory_stats()
        important = self.memory_manager.important_memories(limit=limit, min_importance=0.5)
        session = self.current_session_id or self.say("not started", "未开始")
        return summary_text(stats, important, session, self.conversation_count, self.language)

    @tool_action("stats", "Statistics of the memory system", zh="记忆统计信息")
    def stats(self) -> str:
        """Statistics."""
        stats = self.memory_manager.get_memory_stats()
        session = self.current_session_id or self.say("not started", "未开始")
        return stats_text(stats, session, self.conversation_count, self.language)

    @tool_action("update", "Update a memory", zh="更新记忆")
    def update(
        self,
        memory_id: str,
        content: str | None = None,
        importance: OptionalFraction = None,
        valid_from: str | None = None,
        correction: bool = False,
    ) -> str:
        """Update a memory; a new text keeps the old one as an earlier version.

        Args:
            memory_id: the memory's id (in full, or a prefix of at least 8 characters)
                zh: 记忆ID（完整ID或至少8位的前缀）
            content: the new text
                zh: 新内容
            importance: the new importance 0-1
                zh: 新重要性 0-1
            valid_from: when the new text became true (ISO 8601 with an offset), now by default
                zh: 新内容开始成立的时间（带时区的 ISO 8601），默认为现在
            correction: the old text was never true (only what was believed changes)
                zh: 旧内容从未成立（只修正所知的内容）
        """
        uid = self.memory_id(memory_id)
        manager = self.memory_manager
        if manager.update_memory(uid, content, importance, valid_from=valid_from, correction=correction):
            return self.say("✅ Memory updated", "✅ 记忆已更新")
        raise no_such("memory", memory_id, self.language)

    @tool_action(
        "history",
        "Every version of a memory: what it said, when that held and when it was believed",
        zh="一条记忆的所有版本：内容、成立时间和被相信的时间",
    )
    def history(self, memory_id: str) -> str:
        """Every version of a memory.

        Args:
            memory_id: the memory's id or an earlier version's (in full, or a prefix of at least 8
                characters)
                zh: 记忆ID或其早先版本的ID（完整ID或至少8位的前缀）
        """
        manager = self.memory_manager
        uid = self.memory_id(memory_id)
        versions = manager.memory_history(uid)
        if versions:
            return history_text(uid, versions, self.language)
        if manager.get_memory(uid) is None:
            raise no_such("memory", memory_id, self.language)
        return self.say(f"A working memory keeps no versions: {uid}", f"工作记忆不保留版本: {uid}")

    @tool_action("remove", "Remove a memory", zh="删除记忆")
    def remove(self, memory_id: str) -> str:
        """Remove a memory.

        Args:
            memory_id: the memory's id (in full, or a prefix of at least 8 characters)
                zh: 记忆ID（完整ID或至少8位的前缀）
        """
        uid = self.memory_id(memory_id)
        if self.memory_manager.remove_memory(uid):
            return self.say("✅ Memory removed", "✅ 记忆已删除")
        raise no_such("memory", memory_id, self.language)

    @tool_action("forget", "Forget memories by a strategy", zh="按策略遗忘记忆")
    def forget(
        self,
        strategy: Strategy = "importance_based",
        threshold: Fraction = 0.1,
        max_age_days: Days = 30,
        confirm: Confirm = False,
    ) -> str:
        """Forget memories.

        Args:
            strategy: importance_based, time_based or capacity_based
                zh: importance_based、time_based 或 capacity_based
            threshold: the importance below which importance_based forgets
                zh: importance_based 的重要性阈值
            max_age_days: the most days time_based keeps
                zh: time_based 的最大天数
            confirm: must be true when every memory would be forgotten (threshold 1 or
                max_age_days 0)
                zh: 会遗忘全部记忆时（threshold 为 1 或 max_age_days 为 0）必须为 true
        """
        count = self.memory_manager.forget_memories(strategy, threshold, max_age_days, confirm=confirm)
        return self.say(
            f"🧹 Forgot {count} memories (strategy: {strategy})",
            f"🧹 已遗忘 {count} 条记忆（策略: {strategy}）",
        )

    @tool_action(
        "restore",
        "Bring forgotten long-term memories back (until maintain purges them)",
        zh="恢复被遗忘的长期记忆（maintain 清除之前）",
    )
    def restore(self, memory_ids: list[str] | None = None) -> str:
        """Restore memories.

        Args:
            memory_ids: the memories to restore (in full, or prefixes of at least 8 characters);
                every forgotten long-term memory when left out
                zh: 要恢复的记忆ID（完整ID或至少8位的前缀），省略时恢复全部被遗忘的长期记忆
        """
        named = (
            None if memory_ids is None else [self.memory_id(given, forgotten=True) for given in memory_ids]
        )
        count = self.memory_manager.restore_memories(named)
        return self.say(f"♻️ Restored {count} memories", f"♻️ 已恢复 {count} 条记忆")

    @tool_action(
        "consolidate",
        "Consolidate important short-term memories into long-term ones",
        zh="把重要的短期记忆整合为长期记忆",
    )
    def consolidate(
        self,
        from_type: MemoryTypeName = "working",
        to_type: MemoryTypeName = "episodic",
        importance_threshold: Fraction = 0.7,
    ) -> str:
        """Consolidate memories.

        Args:
            from_type: the type to take from
                zh: 来源类型
            to_type: the type to move to
                zh: 目标类型
            importance_threshold: the lowest importance moved
                zh: 重要性阈值
        """
        count = self.memory_manager.consolidate_memories(from_type, to_type, importance_threshold)
        return self.say(
            f"🔄 Consolidated {count} memories into long-term memory ({from_type} → {to_type}, "
            f"threshold={importance_threshold})",
            f"🔄 已整合 {count} 条记忆为长期记忆（{from_type} → {to_type}，阈值={importance_threshold}）",
        )

    @tool_action(
        "clear_all",
        "Delete every memory of the user (for good; needs confirm=true)",
        zh="清空当前用户的所有记忆（不可恢复，需要 confirm=true）",
    )
    def clear_all(self, confirm: Confirm = False) -> str:
        """Clear every memory.

        Args:
            confirm: must be true to go ahead: every memory of every type and the knowledge graph
                are deleted for good
                zh: 必须为 true 才会执行：所有类型的记忆与知识图谱都会被删除，不可恢复
        """
        if confirm is not True:
            return CLEAR_ALL_WARNING[self.language]
        self.memory_manager.clear_all()
        return self.say("🧽 Every memory was cleared", "🧽 已清空所有记忆")

    # ------------------------------------------------------------------ helpers

    def close(self) -> None:
        self.memory_manager.close()
