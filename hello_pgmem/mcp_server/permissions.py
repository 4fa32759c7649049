"""What each MCP tool needs of a token, and what it tells a client about itself.

A tool needs ``read`` (search, ask, summaries, lists), ``write`` (adds, updates, removes) or
``admin`` (clears everything) of the user's memory or of the namespace it works in. Each also
carries MCP annotations (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``,
``openWorldHint``) so that a client can ask its user before a destructive call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from hello_pgmem.access import Identity, Mode


@dataclass(frozen=True)
class Access:
    needs: Mode
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False

    def annotations(self) -> types.ToolAnnotations:
        read_only = self.needs == "read"
        return types.ToolAnnotations(
            read_only_hint=read_only,
            destructive_hint=None if read_only else self.destructive,
            idempotent_hint=True if read_only else self.idempotent,
            open_world_hint=self.open_world,
        )


READ = Access("read")
TOOLS: dict[str, Access] = {
    "memory_search": READ,
    "memory_summary": READ,
    "memory_stats": READ,
    "memory_graph": READ,
    "memory_sessions": READ,
    "memory_history": READ,
    "memory_add": Access("write"),
    "memory_update": Access("write", destructive=True, idempotent=True),
    "memory_remove": Access("write", destructive=True, idempotent=True),
    "memory_forget": Access("write", destructive=True),
    "memory_consolidate": Access("write"),
    "memory_restore": Access("write", idempotent=True),
    "memory_clear_all": Access("admin", destructive=True, idempotent=True),
    "rag_search": READ,
    "rag_ask": Access("read", open_world=True),  # the chat model is a service outside
    "rag_stats": READ,
    "rag_list_documents": READ,
    "rag_add_document": Access("write", destructive=True, idempotent=True),  # replaces a same-id document
    "rag_add_text": Access("write", destructive=True, idempotent=True),
    "rag_ingest": Access("write", destructive=True, idempotent=True),
    "rag_remove_document": Access("write", destructive=True, idempotent=True),
    "rag_clear": Access("admin", destructive=True, idempotent=True),
}


def namespace_of(tool: str, arguments: Mapping[str, Any], identity: Identity) -> str | None:
    """The namespace a rag tool works in (its argument, else the token's first); None for memory."""
    if not tool.startswith("rag_"):
        return None
    named = arguments.get("namespace")
    if isinstance(named, str) and named:
        return named
    return identity.knowledge[0]


def refusal(identity: Identity, tool: str, arguments: Mapping[str, Any]) -> str | None:
    """Why ``identity`` may not call ``tool`` with ``arguments``, or None when it may."""
    access = TOOLS.get(tool)
    if access is None:
        return None  # unknown tools are refused as such by the server
    namespace = namespace_of(tool, arguments, identity)
    if identity.may(access.needs, namespace):
        return None
    where = f"namespace {namespace!r}" if namespace else "this user's memory"
    has = identity.mode_of(namespace)
    return f"mode: {tool} needs {access.needs} access to {where}; this token has {has}"


def visible(identity: Identity, tool: str) -> bool:
    """Whether ``tools/list`` shows ``tool`` to ``identity``: memory tools by the memory mode, rag
    tools when some namespace of the token allows them."""
    access = TOOLS.get(tool)
    if access is None:
        return True
    if not tool.startswith("rag_"):
        return identity.may(access.needs)
    return any(identity.may(access.needs, n) for n in identity.knowledge)
