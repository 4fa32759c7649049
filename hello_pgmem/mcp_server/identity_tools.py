"""The tools of one identity, as the MCP server lists and runs them: the memory and rag tools of
its user and namespaces, plus ``rag_ingest``, each with the input schema its calls are checked
against."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mcp_types as types

from hello_pgmem.access import Identity
from hello_pgmem.core.i18n import Language, say
from hello_pgmem.mcp_server.permissions import TOOLS, visible
from hello_pgmem.rag.chunking import MAX_CHUNK_SIZE, MIN_CHUNK_SIZE
from hello_pgmem.store import Store
from hello_pgmem.tools.base import ToolRegistry
from hello_pgmem.tools.files import FilesRoot

INGEST_ARGUMENTS = ("paths", "namespace", "chunk_size", "chunk_overlap")


def ingest_tool(language: Language, namespaces: Sequence[str] | None = None) -> types.Tool:
    """rag_ingest, described in ``language``; ``namespaces``, when given, the ones it may fill."""
    named = {} if namespaces is None else {"enum": list(namespaces)}
    return types.Tool(
        name="rag_ingest",
        description=say(
            language,
            "Add files and folders (recursively) to the knowledge base, reporting progress file by "
            "file; every file skipped or failed is listed with its reason",
            "把文件和文件夹（递归）加入知识库，逐个报告进度；跳过或失败的文件逐个列出原因",
        ),
        input_schema={
            "type": "object",
            "properties": {
                "paths": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": say(language, "paths of files or folders", "文件或文件夹路径"),
                },
                "namespace": {
                    "type": "string",
                    **named,
                    "description": say(
                        language, "the namespace, the tool's by default", "命名空间，默认是工具的命名空间"
                    ),
                },
                "chunk_size": {
                    "type": "integer",
                    "default": 800,
                    "minimum": MIN_CHUNK_SIZE,
                    "maximum": MAX_CHUNK_SIZE,
                    "description": say(language, "the size of a chunk (tokens)", "分块大小（token）"),
                },
                "chunk_overlap": {
                    "type": "integer",
                    "default": 100,
                    "minimum": 0,
                    "maximum": MAX_CHUNK_SIZE // 2,
                    "description": say(language, "the overlap of chunks (tokens)", "分块重叠（token）"),
                },
            },
            "required": ["paths"],
            "additionalProperties": False,
        },
    )


class IdentityTools:
    """The memory and rag tools of one identity, from the server's store (one database pool,
    embedder and chat model for all). An identity given no namespace gets one of its own, named
    after its user (``user:<user>``)."""

    def __init__(self, store: Store, identity: Identity, files_root: FilesRoot = None) -> None:
        """``files_root``: the folder both tools read files beneath (``FilesRoot``)."""
        self.identity = identity
        self.memory = store.memory_tool(
            identity.user_id, session_id="mcp", expandable=True, files_root=files_root
        )
        namespaces = identity.knowledge
        self.rag = store.rag_tool(
            namespaces[0],
            namespaces=namespaces,
            expandable=True,
            asked_by=identity.user_id,
            files_root=files_root,
        )
        self.registry = ToolRegistry(language=self.memory.language)
        self.registry.register_tool(self.memory)
        self.registry.register_tool(self.rag)
        self._schemas: dict[str, dict[str, Any]] | None = None

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """The input schema tool ``name`` is listed with, or None when it is not listed."""
        if self._schemas is None:
            self._schemas = {tool.name: tool.input_schema for tool in tool_list(self)}
        return self._schemas.get(name)


def tool_list(box: IdentityTools) -> list[types.Tool]:
    """The tools of a box that its token may call, as MCP tools (the same JSON Schema as the
    OpenAI form) with their annotations, and rag_ingest."""
    tools = []
    for name in box.registry.list_tools():
        function = box.registry.tools[name].to_openai_schema()["function"]
        tools.append(
            types.Tool(name=name, description=function["description"], input_schema=function["parameters"])
        )
    return [
        tool.model_copy(update={"annotations": TOOLS[tool.name].annotations()})
        for tool in [
            *tools,
            ingest_tool(box.memory.language, box.rag.bounds().get("namespace", {}).get("enum")),
        ]
        if tool.name in TOOLS and visible(box.identity, tool.name)
    ]
