"""Tools for agents."""

from hello_pgmem.tools.base import Tool, ToolParameter, ToolRegistry, tool_action
from hello_pgmem.tools.memory_tool import MemoryTool

__all__ = ["MemoryTool", "Tool", "ToolParameter", "ToolRegistry", "tool_action"]
