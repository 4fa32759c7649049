"""The memory tool's reading actions beyond search: the knowledge graph and whole conversations."""

from __future__ import annotations

from uuid import UUID

from hello_pgmem.core.errors import no_such
from hello_pgmem.memory import MemoryManager
from hello_pgmem.tools.base import ActionsTool, ToolText, tool_action
from hello_pgmem.tools.memory_text import memory_data, neighbourhood_text, sessions_text
from hello_pgmem.tools.params import Count, GraphDepth, SessionMemories


class ReadingActions(ActionsTool):
    """Actions of :class:`~hello_pgmem.tools.memory_tool.MemoryTool` that only read."""

    memory_manager: MemoryManager

    def memory_id(self, given: str, forgotten: bool = False) -> UUID:
        """The memory (``forgotten``: the forgotten one) a full id or a prefix of 8 characters or
        more names, else the "no such memory" of every tool."""
        found = self.memory_manager.resolve_id(given, forgotten=forgotten)
        if found is None:
            raise no_such("forgotten memory" if forgotten else "memory", given, self.language)
        return found

    @tool_action(
        "sessions",
        "Whole conversations: the sessions whose memories best match a query, each in its order",
        zh="整段对话：记忆与查询最匹配的会话，每个会话按原来的顺序给出",
    )
    def sessions(self, query: str, limit: Count = 3, max_memories: SessionMemories = 20) -> str:
        """Find whole conversations.

        Args:
            query: what to search for
                zh: 搜索内容
            limit: the most sessions to return
                zh: 最多返回的会话数
            max_memories: the most memories shown of each session, in order
                zh: 每个会话最多显示的记忆条数（按原来的顺序）
        """
        found = self.memory_manager.retrieve_sessions(query, limit, max_memories=max_memories)
        data = [
            {
                "session_id": s.session_id,
                "score": s.score,
                "hits": [str(m.id) for m in s.hits],
                "memories": [memory_data(m) for m in s.memories],
            }
            for s in found
        ]
        return ToolText(sessions_text(query, found, self.language), {"sessions": data})

    @tool_action(
        "graph",
        "Query the knowledge graph: an entity's network of relations, the path between two entities, "
        "the entities of a memory",
        zh="查询知识图谱：实体的关系网络、两个实体之间的路径、记忆中的实体",
    )
    def graph(
        self,
        entity: str | None = None,
        depth: GraphDepth = 1,
        target: str | None = None,
        memory_id: str | None = None,
        valid_at: str | None = None,
        known_at: str | None = None,
    ) -> str:
        """Query the knowledge graph.

        Args:
            entity: an entity's name (its network of relations and its memories)
                zh: 实体名称（查询其关系网络与相关记忆）
            depth: the depth of the network, 1-3
                zh: 关系网络的深度 1-3
            target: a second entity (with entity: the shortest path between the two)
                zh: 目标实体（与 entity 一起给出时，查询两者之间的最短路径）
            memory_id: a memory's id (the entities in that memory)
                zh: 记忆ID（查询这条记忆中的实体）
            valid_at: the graph as it held at this time (ISO 8601 with a time zone)
                zh: 查询该时刻成立的图谱（ISO 8601，带时区）
            known_at: as the store knew it at this time (ISO 8601 with a time zone)
                zh: 按存储在该时刻所知的内容（ISO 8601，带时区）
        """
        manager = self.memory_manager
        if memory_id is not None:
            given = [name for name, value in (("entity", entity), ("target", target), ("valid_at", valid_at),
                                              ("known_at", known_at)) if value is not None]  # fmt: skip
            if given:
                return self.bad_input(f"{given[0]}: a memory's entities are read with memory_id alone")
            entities = manager.memory_entities(self.memory_id(memory_id))
            if not entities:
                return self.say("🕸️ No entity was found in this memory", "🕸️ 这条记忆中没有识别出实体")
            names = ", ".join(f"{e.name}({e.entity_type})" for e in entities)
            return self.say(f"🕸️ Entities of the memory: {names}", f"🕸️ 记忆中的实体: {names}")
        if entity is None:
            return self.bad_input(
                self.say("entity: give entity or memory_id", "entity: 请给出 entity 或 memory_id")
            )
        if target is not None:
            steps = manager.graph_path(entity, target, valid_at=valid_at, known_at=known_at)
            if not steps:
                return self.say(
                    f"🕸️ No path of relations between '{entity}' and '{target}'",
                    f"🕸️ 未找到 '{entity}' 与 '{target}' 之间的关系路径",
                )
            chain = "; ".join(f"{s.source} —{s.relation_type}→ {s.target}" for s in steps)
            counted = f"{len(steps)} step" + ("" if len(steps) == 1 else "s")
            return self.say(
                f"🕸️ The path from '{entity}' to '{target}' ({counted}): {chain}",
                f"🕸️ '{entity}' 到 '{target}' 的路径（{len(steps)} 步）: {chain}",
            )
        hood = manager.graph_neighbourhood(entity, depth, valid_at=valid_at, known_at=known_at)
        if hood is None:
            raise no_such("entity", entity, self.language)
        memories = manager.entity_memories(entity, limit=5, valid_at=valid_at, known_at=known_at)
        as_of = valid_at is not None or known_at is not None
        return neighbourhood_text(hood, depth, memories, self.language, as_of)
