"""The MCP server over the memory and rag tools (``hello-pgmem mcp``).

One MCP tool per tool action (``memory_add``, ``memory_search``, ``rag_search``, …) with the JSON
Schema, validation and text results of ``MemoryTool`` and ``RAGTool``, plus ``rag_ingest`` (files
and folders, with progress notifications). A failed action comes back as a tool result with
``isError`` and the tool's ``❌ field: rule`` text; an unknown tool or a refused request as an MCP
error. Resources: ``memory://summary``, ``memory://stats``, ``rag://namespaces`` and
``rag://{namespace}/documents``.

Every call runs for one identity (a user and the namespaces it may use): over stdio the one the
server was started with, over HTTP the one of the request's bearer token. The database scopes
every statement to that user by row-level security, so a mistake here still cannot reach another
user's rows. Over HTTP, tools that read files of the server's machine (``rag_add_document``,
``rag_ingest``) are refused unless ``files_root`` names a folder, and then stay inside it.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from importlib.metadata import version as package_version
from pathlib import Path
from threading import Lock
from typing import Any, TypeVar
from uuid import UUID

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from hello_pgmem.db import Database
from hello_pgmem.deadline import call_deadline
from hello_pgmem.embedding import Embedder, create_embedder
from hello_pgmem.llm import ChatClient, create_chat_client
from hello_pgmem.mcp_server.access import TOOLS, refusal, visible
from hello_pgmem.mcp_server.tokens import Identity, check_mode, resolve_token
from hello_pgmem.rag.chunking import MAX_CHUNK_SIZE, MIN_CHUNK_SIZE, check_sizes
from hello_pgmem.tools.base import ToolRegistry, ToolText
from hello_pgmem.tools.memory_tool import MemoryTool
from hello_pgmem.tools.rag_tool import RAGTool

log = logging.getLogger(__name__)
T = TypeVar("T")

INVALID_PARAMS = -32602
TEXT = "text/plain"
REFUSED = -32000  # a server error of JSON-RPC's implementation-defined range: over a limit
MAX_BOXES = 1000  # tool boxes kept for the most recent identities
FILE_TOOLS = ("rag_add_document", "rag_ingest")
INGEST = types.Tool(
    name="rag_ingest",
    description="把文件和文件夹（递归，支持的格式）加入知识库，逐个报告进度",
    input_schema={
        "type": "object",
        "properties": {
            "paths": {"type": "array", "items": {"type": "string"}, "description": "文件或文件夹路径"},
            "namespace": {"type": "string", "description": "命名空间，默认是工具的命名空间"},
            "chunk_size": {
                "type": "integer",
                "default": 800,
                "minimum": MIN_CHUNK_SIZE,
                "maximum": MAX_CHUNK_SIZE,
                "description": "分块大小（token）",
            },
            "chunk_overlap": {
                "type": "integer",
                "default": 100,
                "minimum": 0,
                "maximum": MAX_CHUNK_SIZE // 2,
                "description": "分块重叠（token）",
            },
        },
        "required": ["paths"],
    },
)
RESOURCES = [
    types.Resource(name="memory summary", uri="memory://summary", mime_type="text/plain"),
    types.Resource(name="memory stats", uri="memory://stats", mime_type="text/plain"),
    types.Resource(name="rag namespaces", uri="rag://namespaces", mime_type="text/plain"),
]
DOCUMENTS = types.ResourceTemplate(
    name="rag documents", uri_template="rag://{namespace}/documents", mime_type="text/plain"
)


@dataclass(frozen=True)
class Limits:
    """What one identity may ask of the server."""

    calls_per_minute: int = 120  # every request: tool calls, lists and resource reads
    concurrent_calls: int = 4  # requests of one identity in progress at once
    call_timeout_s: float = 120.0  # the reply, and the work: statements and loops stop at it
    max_request_bytes: int = 1_000_000
    failed_tokens_per_minute: int = 20  # HTTP: bad tokens per client address before 429
    files_root: Path | None = None  # HTTP only: the folder file tools may read (None: refused)


@dataclass
class RateGate:
    """A token bucket per identity: ``calls_per_minute`` calls, refilled continuously."""

    calls_per_minute: int
    _buckets: dict[str, tuple[float, float]] = field(default_factory=dict)
    _lock: Lock = field(default_factory=Lock)

    def allow(self, key: str, now: float | None = None) -> float:
        """0 when the call may go, else the seconds until it may."""
        moment = time.monotonic() if now is None else now
        rate = self.calls_per_minute / 60.0
        with self._lock:
            tokens, last = self._buckets.get(key, (float(self.calls_per_minute), moment))
            tokens = min(float(self.calls_per_minute), tokens + (moment - last) * rate)
            if tokens < 1:
                self._buckets[key] = (tokens, moment)
                return (1 - tokens) / rate
            self._buckets[key] = (tokens - 1, moment)
            return 0.0


@dataclass
class ConcurrencyGate:
    """At most ``limit`` requests of one identity in progress at once."""

    limit: int
    _running: dict[str, int] = field(default_factory=dict)
    _lock: Lock = field(default_factory=Lock)

    def enter(self, key: str) -> bool:
        with self._lock:
            if self._running.get(key, 0) >= self.limit:
                return False
            self._running[key] = self._running.get(key, 0) + 1
            return True

    def leave(self, key: str) -> None:
        with self._lock:
            left = self._running.get(key, 1) - 1
            if left:
                self._running[key] = left
            else:
                self._running.pop(key, None)


class Refused(Exception):
    """A request the limits turn away, with the text that says why."""


class ToolBox:
    """The memory and rag tools of one identity, sharing the server's database pool, embedder and
    chat model. An identity given no namespace gets one of its own, named after its user."""

    def __init__(self, db: Database, identity: Identity, embedder: Embedder, llm: ChatClient | None) -> None:
        self.identity = identity
        self.memory = MemoryTool(
            user_id=identity.user_id, database=db, embedder=embedder, session_id="mcp", expandable=True
        )
        namespaces = identity.namespaces or (identity.user_id,)
        self.rag = RAGTool(
            rag_namespace=namespaces[0],
            namespaces=namespaces,
            database=db,
            embedder=embedder,
            llm=llm,
            expandable=True,
            user_id=identity.user_id,
        )
        self.registry = ToolRegistry()
        self.registry.register_tool(self.memory)
        self.registry.register_tool(self.rag)


def tool_list(box: ToolBox) -> list[types.Tool]:
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
        for tool in [*tools, INGEST]
        if tool.name in TOOLS and visible(box.identity, tool.name)
    ]


def text_result(text: str) -> types.CallToolResult:
    """A tool's text as an MCP result; an action that answers with data (``ToolText``: search,
    add) also sends it as structured content."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=text.data if isinstance(text, ToolText) else None,
        is_error=text.lstrip().startswith("❌"),
    )


def inside(root: Path, path: str) -> bool:
    """Whether ``path`` resolves to a place under ``root`` (symbolic links followed)."""
    try:
        return Path(path).expanduser().resolve().is_relative_to(root.resolve())
    except (OSError, ValueError):
        return False


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
        self.embedder = create_embedder(db.settings)  # one model for every identity
        self.llm = create_chat_client(db.settings)
        self._boxes: OrderedDict[Identity, ToolBox] = OrderedDict()  # the most recently used
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

    def box(self, identity: Identity) -> ToolBox:
        with self._lock:
            if identity in self._boxes:
                self._boxes.move_to_end(identity)
            else:
                self._boxes[identity] = ToolBox(self.db, identity, self.embedder, self.llm)
                while len(self._boxes) > MAX_BOXES:
                    self._boxes.popitem(last=False)
            return self._boxes[identity]

    @asynccontextmanager
    async def admitted(self, identity: Identity) -> AsyncIterator[None]:
        """One request of ``identity`` within the rate and the concurrency limits, else Refused."""
        key = str(identity.token_id or identity.user_id)
        wait = self.gate.allow(key)
        if wait:
            limit = self.limits.calls_per_minute
            raise Refused(f"rate: at most {limit} requests a minute; retry in {wait:.0f}s")
        if not self.running.enter(key):
            raise Refused(f"concurrency: at most {self.limits.concurrent_calls} requests at once per token")
        try:
            yield
        finally:
            self.running.leave(key)

    async def bounded(self, work: Callable[[], T]) -> T:
        """``work`` in a worker thread under the call's time limit: the reply is abandoned at the
        limit, and the work itself stops there too (statement timeout, checks in long loops)."""
        seconds = self.limits.call_timeout_s

        def run() -> T:
            with call_deadline(seconds):
                return work()

        try:
            with anyio.fail_after(seconds):
                return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        except TimeoutError as exc:
            raise Refused(f"timeout: the call took longer than {seconds:g}s and was stopped") from exc

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        identity = self.identify(ctx)
        try:
            async with self.admitted(identity):
                box = await self.bounded(lambda: self.box(identity))
        except Refused as exc:
            raise MCPError(REFUSED, str(exc)) from exc
        return types.ListToolsResult(tools=tool_list(box))

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        identity = self.identify(ctx)
        try:
            async with self.admitted(identity):
                return await self.run_tool(ctx, identity, params)
        except Refused as exc:
            return text_result(f"❌ {exc}")

    async def run_tool(
        self, ctx: Any, identity: Identity, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        if len(repr(arguments)) > self.limits.max_request_bytes:
            return text_result(f"❌ arguments: must be at most {self.limits.max_request_bytes} bytes")
        refused_mode = refusal(identity, params.name, arguments)
        if refused_mode:
            return text_result(f"❌ {refused_mode}")
        box = await self.bounded(lambda: self.box(identity))
        if params.name in FILE_TOOLS and self.remote:
            refused = self.refuse_files(arguments)
            if refused:
                return text_result(refused)
        if params.name == "rag_ingest":
            return await self.ingest(ctx, box, arguments)
        tool = box.registry.get_tool(params.name)
        if tool is None:
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}")
        return text_result(await self.bounded(lambda: tool.run(arguments)))

    def refuse_files(self, arguments: dict[str, Any]) -> str | None:
        """Why a file tool may not run over HTTP with these arguments, or None."""
        root = self.limits.files_root
        if root is None:
            return "❌ file_path: reading the server's files is off (start the server with --files-root)"
        paths = arguments.get("paths") if "paths" in arguments else [arguments.get("file_path")]
        if not isinstance(paths, list) or not all(isinstance(p, str) and inside(root, p) for p in paths):
            return f"❌ file_path: must be inside {root}"
        return None

    async def ingest(self, ctx: Any, box: ToolBox, arguments: dict[str, Any]) -> types.CallToolResult:
        """rag_ingest: every file, one progress notification per file."""
        paths = arguments.get("paths")
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
            return text_result("❌ paths: must be a non-empty list of file or folder paths")
        try:
            kb = box.rag.knowledge_base(arguments.get("namespace"))
            chunk_size, chunk_overlap = check_sizes(
                arguments.get("chunk_size", 800), arguments.get("chunk_overlap", 100)
            )
        except Exception as exc:  # InvalidInputError names the namespace or size rule
            return text_result(f"❌ {exc}")

        def progress(done: int, total: int, result: Any) -> None:
            message = f"{result.status}: {result.source_path or result.document_id}"
            anyio.from_thread.run(ctx.session.report_progress, done, total, message)

        def run() -> str:
            results = kb.ingest(
                paths,
                chunk_size=chunk_size,
                chunk_overlap=chunk_overlap,
                progress=progress,
            )
            lines = [f"{r.status}: {r.source_path or r.document_id} ({r.chunks} chunks)" for r in results]
            failed = [r for r in results if r.status == "failed"]
            head = f"✅ 已处理 {len(results)} 个文件，失败 {len(failed)} 个（命名空间 {kb.namespace}）"
            return "\n".join([head, *lines, *(f"  {r.error}" for r in failed)])

        return text_result(await self.bounded(run))

    async def list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        identity = self.identify(ctx)
        try:
            async with self.admitted(identity):
                namespaces = identity.namespaces or (identity.user_id,)
                documents = [
                    types.Resource(name=f"documents of {n}", uri=f"rag://{n}/documents", mime_type=TEXT)
                    for n in namespaces
                ]
        except Refused as exc:
            raise MCPError(REFUSED, str(exc)) from exc
        return types.ListResourcesResult(resources=[*RESOURCES, *documents])

    async def list_resource_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        try:
            async with self.admitted(self.identify(ctx)):
                return types.ListResourceTemplatesResult(resource_templates=[DOCUMENTS])
        except Refused as exc:
            raise MCPError(REFUSED, str(exc)) from exc

    async def read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        identity = self.identify(ctx)
        uri = str(params.uri)
        try:
            async with self.admitted(identity):
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
            return "\n".join(identity.namespaces or (identity.user_id,))
        if uri.startswith("rag://") and uri.endswith("/documents"):
            namespace = uri.removeprefix("rag://").removesuffix("/documents")
            return box.rag.run("list_documents", namespace=namespace, limit=1000)
        raise MCPError(INVALID_PARAMS, f"unknown resource {uri!r}")

    def close(self) -> None:
        with self._lock:
            self._boxes.clear()


# ---------------------------------------------------------------------------- transports

SCOPE_PREFIX = "namespace:"
MODE_PREFIX = "mode:"
NAMESPACE_MODE_PREFIX = "namespace-mode:"


class DatabaseTokens:
    """The MCP SDK's token verifier over ``access_tokens`` (through ``token_identity``)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        identity = await anyio.to_thread.run_sync(resolve_token, self.db, token)
        if identity is None:
            return None
        scopes = [SCOPE_PREFIX + n for n in identity.namespaces]
        scopes += [MODE_PREFIX + identity.mode]
        scopes += [f"{NAMESPACE_MODE_PREFIX}{mode}:{n}" for n, mode in identity.namespace_modes]
        return AccessToken(
            token=token, client_id=identity.user_id, scopes=scopes, subject=str(identity.token_id)
        )


def token_identity(ctx: Any) -> Identity:
    """The identity of an HTTP request, from the token its bearer middleware verified."""
    request = getattr(ctx, "request", None)
    user = request.scope.get("user") if request is not None else None
    token = getattr(user, "access_token", None)
    if token is None:  # the middleware lets no request through without one: a bug if it did
        raise MCPError(INVALID_PARAMS, "no verified bearer token")
    namespaces = tuple(s.removeprefix(SCOPE_PREFIX) for s in token.scopes if s.startswith(SCOPE_PREFIX))
    modes = [check_mode(s.removeprefix(MODE_PREFIX)) for s in token.scopes if s.startswith(MODE_PREFIX)]
    per_namespace = tuple(
        sorted(
            (name, check_mode(mode))
            for mode, name in (
                s.removeprefix(NAMESPACE_MODE_PREFIX).split(":", 1)
                for s in token.scopes
                if s.startswith(NAMESPACE_MODE_PREFIX)
            )
        )
    )
    token_id = UUID(token.subject) if token.subject else None
    return Identity(token.client_id, namespaces, token_id, modes[0] if modes else "read", per_namespace)


async def serve_stdio(db: Database, identity: Identity, limits: Limits | None = None) -> None:
    """Serve one identity over stdin and stdout until the client goes."""
    from mcp.server.stdio import stdio_server

    server = PgMemServer(db, lambda ctx: identity, limits)
    async with stdio_server() as (read, write):
        await server.server.run(read, write, server.server.create_initialization_options())


@dataclass
class FailedTokens:
    """Bad bearer tokens per client address in the last minute; past the limit, 429 without a
    database lookup until the minute has passed."""

    per_minute: int
    _seen: OrderedDict[str, list[float]] = field(default_factory=OrderedDict)
    _lock: Lock = field(default_factory=Lock)

    def _recent(self, client: str, now: float) -> list[float]:
        times = [t for t in self._seen.get(client, []) if now - t < 60]
        self._seen[client] = times
        self._seen.move_to_end(client)
        while len(self._seen) > MAX_BOXES:  # bounded memory, whatever the number of addresses
            self._seen.popitem(last=False)
        return times

    def blocked(self, client: str, now: float | None = None) -> float:
        """Seconds until ``client`` may try again (0: it may)."""
        moment = time.monotonic() if now is None else now
        with self._lock:
            times = self._recent(client, moment)
            return 60 - (moment - times[0]) if len(times) >= self.per_minute else 0.0

    def failed(self, client: str, now: float | None = None) -> None:
        moment = time.monotonic() if now is None else now
        with self._lock:
            self._recent(client, moment).append(moment)


def throttle_failed_tokens(app: Any, gate: FailedTokens) -> Any:
    """ASGI middleware: a client address whose tokens keep failing gets 429 for the rest of the
    minute, so guessing costs neither a database lookup nor a hash per try."""

    async def throttled(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        client = (scope.get("client") or ("unknown",))[0]
        wait = gate.blocked(client)
        if wait:
            await send(
                {
                    "type": "http.response.start",
                    "status": 429,
                    "headers": [(b"retry-after", b"%d" % (int(wait) + 1)), (b"content-type", b"text/plain")],
                }
            )
            await send({"type": "http.response.body", "body": b"too many failed tokens; retry later\n"})
            return
        status: list[int] = []

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            await send(message)

        await app(scope, receive, watch)
        if status and status[0] == 401:
            gate.failed(client)

    return throttled


def http_app(db: Database, public_url: str, limits: Limits | None = None, host: str = "127.0.0.1") -> Any:
    """The streamable HTTP application: bearer tokens required, limits applied.

    Tokens are made by ``hello-pgmem token create``: there is no OAuth authorization server, so
    none is advertised (no protected-resource metadata, a plain ``WWW-Authenticate: Bearer``).
    """
    from mcp.server.auth.settings import AuthSettings

    limits = limits or Limits()
    server = PgMemServer(db, token_identity, limits, remote=True)
    app = server.server.streamable_http_app(
        auth=AuthSettings(issuer_url=public_url.rstrip("/"), resource_server_url=None),  # type: ignore[arg-type]
        token_verifier=DatabaseTokens(db),
        max_request_body_size=limits.max_request_bytes,
        host=host,
    )
    return throttle_failed_tokens(app, FailedTokens(limits.failed_tokens_per_minute))


def serve_http(
    db: Database, host: str, port: int, limits: Limits | None = None, public_url: str | None = None
) -> None:
    """Serve over streamable HTTP at ``http://host:port/mcp`` until interrupted."""
    import uvicorn

    app = http_app(db, public_url or f"http://{host}:{port}", limits, host)
    uvicorn.run(app, host=host, port=port, log_level="warning")
