"""Tools for agents."""

from hello_pgmem.tools.base import Tool, ToolRegistry, ToolText, failed, succeeded, tool_action
from hello_pgmem.tools.memory_tool import MemoryTool
from hello_pgmem.tools.rag_tool import RAGTool
from hello_pgmem.tools.schema import ToolParameter

__all__ = [
    "MemoryTool",
    "RAGTool",
    "Tool",
    "ToolParameter",
    "ToolRegistry",
    "ToolText",
    "failed",
    "succeeded",
    "tool_action",
]
