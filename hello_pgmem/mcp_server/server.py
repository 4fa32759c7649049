"""The MCP server over the memory and rag tools (``hello-pgmem mcp``).

One MCP tool per tool action (``memory_add``, ``memory_search``, ``rag_search``, …) with the JSON
Schema and text results of ``MemoryTool`` and ``RAGTool``, plus ``rag_ingest`` (files and
folders, with progress notifications): :mod:`hello_pgmem.mcp_server.identity_tools`. A call's
arguments are checked against its tool's schema first. A failed action comes back as a tool
result with ``isError`` (the tool's ``ok`` False) and its ``❌ field: rule`` text; an unknown tool
or a refused request as an MCP error. Resources: ``memory://summary``, ``memory://stats``,
``rag://namespaces`` and ``rag://{namespace}/documents``.

Every call runs for one identity (a user and the namespaces it may use): over stdio the one the
server was started with, over HTTP the one of the request's bearer token. The database scopes
every statement to that user by row-level security, so a mistake here still cannot reach another
user's rows. Tools that read files of the server's machine (``rag_add_document``, ``rag_ingest``,
``memory_add`` of a perceptual memory's file) read only beneath a files root: over HTTP the
identity's own folder beneath ``--files-root`` (refused without one), over stdio ``--files-root``
or, by default, the working directory.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from importlib.metadata import version as package_version
from pathlib import Path
from threading import Lock
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from hello_pgmem.access import Identity
from hello_pgmem.core.deadline import call_deadline
from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.db import Database
from hello_pgmem.mcp_server.arguments import argument_error, given
from hello_pgmem.mcp_server.identity_tools import INGEST_ARGUMENTS, IdentityTools, tool_list
from hello_pgmem.mcp_server.limits import ConcurrencyGate, Limits, RateGate, Refused
from hello_pgmem.mcp_server.permissions import refusal
from hello_pgmem.mcp_server.remote import inside, scrub, user_root
from hello_pgmem.mcp_server.sessions import rate_wait
from hello_pgmem.rag.chunking import check_sizes
from hello_pgmem.store import Store
from hello_pgmem.tools.base import ToolText, failed, succeeded
from hello_pgmem.tools.files import FilesRoot
from hello_pgmem.tools.rag_text import ingest_report

log = logging.getLogger(__name__)
T = TypeVar("T")
_CALLER: ContextVar[str | None] = ContextVar("pgmem_mcp_caller", default=None)
"""The key of the identity whose request is being served (its concurrency gate's)."""

INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002  # the MCP specification's code for a resource the server does not have
TEXT = "text/plain"
REFUSED = -32000  # a server error of JSON-RPC's implementation-defined range: over a limit
MAX_BOXES = 1000  # tool boxes kept for the most recent identities
FILE_TOOLS = ("rag_add_document", "rag_ingest")


RESOURCES = [
    types.Resource(name="memory summary", uri="memory://summary", mime_type="text/plain"),
    types.Resource(name="memory stats", uri="memory://stats", mime_type="text/plain"),
    types.Resource(name="rag namespaces", uri="rag://namespaces", mime_type="text/plain"),
]
DOCUMENTS = types.ResourceTemplate(
    name="rag documents", uri_template="rag://{namespace}/documents", mime_type="text/plain"
)


def text_result(text: str) -> types.CallToolResult:
    """A tool's text as an MCP result: ``isError`` when the tool says it failed, and an answer with
    data (``ToolText``: search, add) also as structured content."""
    data = text.data if isinstance(text, ToolText) else None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=data,
        is_error=not succeeded(text),
    )


def refused(message: str) -> types.CallToolResult:
    """A call the server itself refused, as a failed tool result."""
    return text_result(failed(f"❌ {message}"))


class PgMemServer:
    """The lowlevel MCP server, its tool boxes per identity and its limits."""

    def __init__(
        self,
        db: Database,
        identify: Callable[[Any], Identity],
        limits: Limits | None = None,
        *,
        remote: bool = False,
    ) -> None:
        self.db = db
        self.identify = identify
        self.limits = limits or Limits()
        self.remote = remote
        self.gate = RateGate(self.limits.calls_per_minute)
        self.running = ConcurrencyGate(self.limits.concurrent_calls)
        self.store = Store(database=db)  # one embedder and chat model for every identity
        self._boxes: OrderedDict[Identity, IdentityTools] = OrderedDict()  # the most recently used
        self._lock = Lock()
        self.server: Server[Any] = Server(
            "hello-pgmem",
            version=package_version("hello-pgmem"),
            instructions="Long-term memory and a knowledge base in PostgreSQL, for one user per call.",
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_resource_templates,
            on_read_resource=self.read_resource,
        )

    def box(self, identity: Identity) -> IdentityTools:
        with self._lock:
            if identity in self._boxes:
                self._boxes.move_to_end(identity)
            else:
                self._boxes[identity] = IdentityTools(self.store, identity, self.files_of(identity))
                while len(self._boxes) > MAX_BOXES:
                    self._boxes.popitem(last=False)
            return self._boxes[identity]

    @asynccontextmanager
    async def admitted(self, ctx: Any, identity: Identity) -> AsyncIterator[None]:
        """One request of ``identity`` within the rate (over HTTP, as :class:`SessionGuard`
        counted it) and the concurrency limit, else Refused."""
        key = str(identity.token_id or identity.user_id)
        request = getattr(ctx, "request", None) if self.remote else None
        wait = rate_wait(request.scope) if request is not None else 0.0
        if wait:
            limit = self.limits.calls_per_minute
            raise Refused(f"rate: at most {limit} requests a minute; retry in {wait:.0f}s")
        if not self.running.enter(key):
            raise Refused(f"concurrency: at most {self.limits.concurrent_calls} requests at once per token")
        caller = _CALLER.set(key)
        try:
            yield
        finally:
            _CALLER.reset(caller)
            self.running.leave(key)

    async def bounded(self, work: Callable[[], T]) -> T:
        """``work`` in a worker thread under the call's time limit: the reply is abandoned at the
        limit, and the work itself stops there too (statement timeout, checks in long loops). Work
        that cannot stop at once (a model's encoding, in C) keeps its caller's place among its
        concurrent calls until it really ends, so abandoned calls cannot pile up."""
        seconds = self.limits.call_timeout_s
        key = _CALLER.get()
        lock = Lock()
        state = {"done": False, "abandoned": False}

        def run() -> T:
            try:
                with call_deadline(seconds):
                    return work()
            finally:
                with lock:
                    state["done"] = True
                    if state["abandoned"] and key is not None:
                        self.running.leave(key)

        try:
            with anyio.fail_after(seconds):
                return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        except TimeoutError as exc:
            with lock:
                if not state["done"] and key is not None:
                    state["abandoned"] = True
                    self.running.hold(key)
            raise Refused(f"timeout: the call took longer than {seconds:g}s and was stopped") from exc

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        identity = self.identify(ctx)
        try:
            async with self.admitted(ctx, identity):
                box = await self.bounded(lambda: self.box(identity))
        except Refused as exc:
            raise MCPError(REFUSED, str(exc)) from exc
        return types.ListToolsResult(tools=tool_list(box))

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        identity = self.identify(ctx)
        try:
            async with self.admitted(ctx, identity):
                return self.for_caller(identity, await self.run_tool(ctx, identity, params))
        except Refused as exc:
            return refused(str(exc))

    def for_caller(self, identity: Identity, result: types.CallToolResult) -> types.CallToolResult:
        """Over HTTP, a result without the server's own paths, hosts or role names."""
        if not self.remote:
            return result
        roots = [r for r in (self.root_of(identity), self.limits.files_root) if r is not None]
        parts = [
            part.model_copy(update={"text": scrub(part.text, *roots)})
            if isinstance(part, types.TextContent)
            else part
            for part in result.content
        ]
        return result.model_copy(update={"content": parts})

    async def run_tool(
        self, ctx: Any, identity: Identity, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        if len(repr(arguments)) > self.limits.max_request_bytes:
            return refused(f"arguments: must be at most {self.limits.max_request_bytes} bytes")
        refused_mode = refusal(identity, params.name, arguments)
        if refused_mode:
            return refused(refused_mode)
        box = await self.bounded(lambda: self.box(identity))
        schema = box.input_schema(params.name)
        if schema is None:
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}")
        arguments = given(arguments)
        wrong = argument_error(schema, arguments)
        if wrong:
            return text_result(box.memory.bad_input(wrong))
        if params.name in FILE_TOOLS and self.remote:
            outside = self.refuse_files(identity, arguments)
            if outside:
                return refused(outside)
        if params.name == "rag_ingest":
            return await self.ingest(ctx, box, arguments)
        tool = box.registry.tools[params.name]  # listed, so registered
        return text_result(await self.bounded(lambda: tool.run(arguments)))

    def files_of(self, identity: Identity) -> FilesRoot:
        """Where an identity's tools read files: over HTTP its own folder beneath ``--files-root``,
        or nowhere; over stdio ``--files-root``, by default the working directory."""
        if not self.remote:
            return self.limits.files_root
        return self.root_of(identity) or False

    def root_of(self, identity: Identity) -> Path | None:
        """The folder an identity's file tools read over HTTP: its own beneath ``--files-root``
        (:func:`user_root`); None on stdio (any file the local user may read) or when it has none."""
        if not self.remote or self.limits.files_root is None:
            return None
        return user_root(self.limits.files_root, identity.user_id)

    def refuse_files(self, identity: Identity, arguments: dict[str, Any]) -> str | None:
        """Why a file tool may not run over HTTP with these arguments, or None."""
        if self.limits.files_root is None:
            return "file_path: reading the server's files is off (start the server with --files-root)"
        root = self.root_of(identity)
        if root is None:
            return "file_path: this user has no folder beneath the server's --files-root"
        paths = arguments.get("paths") if "paths" in arguments else [arguments.get("file_path")]
        if not isinstance(paths, list) or not all(isinstance(p, str) and inside(root, p) for p in paths):
            return "file_path: must be inside this user's folder of the server's --files-root"
        return None

    async def ingest(self, ctx: Any, box: IdentityTools, arguments: dict[str, Any]) -> types.CallToolResult:
        """rag_ingest: every file, one progress notification per file."""
        unknown = sorted(set(arguments) - set(INGEST_ARGUMENTS))
        if unknown:
            return refused(f"{unknown[0]}: unknown argument (rag_ingest takes {', '.join(INGEST_ARGUMENTS)})")
        paths = arguments.get("paths")
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
            return refused("paths: must be a non-empty list of file or folder paths")
        try:
            kb = box.rag.knowledge_base(arguments.get("namespace"))
            chunk_size, chunk_overlap = check_sizes(
                arguments.get("chunk_size", 800), arguments.get("chunk_overlap", 100)
            )
        except Exception as exc:  # InvalidInputError names the namespace or size rule
            return refused(str(exc))

        def progress(done: int, total: int, result: Any) -> None:
            message = f"{result.status}: {result.source_path or result.document_id}"
            anyio.from_thread.run(ctx.session.report_progress, done, total, message)

        root = box.rag.files_root
        if root is None:
            return refused("paths: reading the server's files is off (start the server with --files-root)")

        def run() -> str:
            try:
                results = kb.ingest(
                    [str(root / p) for p in paths],
                    chunk_size=chunk_size,
                    chunk_overlap=chunk_overlap,
                    progress=progress,
                    root=root,
                )
            except InvalidInputError as exc:  # a path refused, or over the budget: nothing stored
                return failed(f"❌ {exc}")
            return ingest_report(results, kb.namespace, box.rag.language)

        return text_result(await self.bounded(run))

    async def list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        identity = self.identify(ctx)
        try:
            async with self.admitted(ctx, identity):
                namespaces = identity.knowledge
                documents = [
                    types.Resource(name=f"documents of {n}", uri=f"rag://{n}/documents", mime_type=TEXT)
                    for n in namespaces
                ]
        except Refused as exc:
            raise MCPError(REFUSED, str(exc)) from exc
        return types.ListResourcesResult(resources=[*RESOURCES, *documents])

    async def list_resource_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        try:
            async with self.admitted(ctx, self.identify(ctx)):
                return types.ListResourceTemplatesResult(resource_templates=[DOCUMENTS])
        except Refused as exc:
            raise MCPError(REFUSED, str(exc)) from exc

    async def read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        identity = self.identify(ctx)
        uri = str(params.uri)
        try:
            async with self.admitted(ctx, identity):
                text = await self.bounded(lambda: self.resource_text(identity, uri))
        except Refused as exc:
            raise MCPError(REFUSED, str(exc)) from exc
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)]
        )

    def resource_text(self, identity: Identity, uri: str) -> str:
        """The text of one resource of ``identity`` (runs in a worker thread)."""
        box = self.box(identity)
        if uri == "memory://summary":
            return box.memory.run("summary")
        if uri == "memory://stats":
            return box.memory.run("stats")
        if uri == "rag://namespaces":
            return "\n".join(identity.knowledge)
        if uri.startswith("rag://") and uri.endswith("/documents"):
            namespace = uri.removeprefix("rag://").removesuffix("/documents")
            listed = box.rag.run("list_documents", namespace=namespace, limit=1000)
            if not succeeded(listed):  # a namespace this identity may not read is one it has not
                raise MCPError(RESOURCE_NOT_FOUND, listed.removeprefix("❌ "))
            return listed
        raise MCPError(RESOURCE_NOT_FOUND, f"unknown resource {uri!r}")

    def close(self) -> None:
        with self._lock:
            self._boxes.clear()


async def serve_stdio(db: Database, identity: Identity, limits: Limits | None = None) -> None:
    """Serve one identity over stdin and stdout until the client goes."""
    from mcp.server.stdio import stdio_server

    server = PgMemServer(db, lambda ctx: identity, limits)
    async with stdio_server() as (read, write):
        await server.server.run(read, write, server.server.create_initialization_options())
