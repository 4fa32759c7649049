"""The read-only web view: server-rendered pages of one user's memories, searches with every score
component and the SQL that ran, the knowledge graph drawn, RAG documents and their chunks, and
the analytics views. No JavaScript; every read is a READ ONLY transaction of a read-only store
(``PGMEM_READ_ONLY``), scoped to the viewer by row-level security."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit
from uuid import UUID

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from hello_pgmem.access import Identity
from hello_pgmem.access.exposure import allowed_hosts, check_host
from hello_pgmem.access.throttle import FailedTokens, client_address
from hello_pgmem.core.errors import InvalidInputError, NotFoundError, no_such
from hello_pgmem.core.models import check_scoring
from hello_pgmem.memory import MemorySearch
from hello_pgmem.store import Store
from hello_pgmem.ui import drawing, reads
from hello_pgmem.ui.login import Login, identity_of_token
from hello_pgmem.ui.text import LABELS, translator

HERE = Path(__file__).resolve().parent
SEARCH_TYPES = ("episodic", "semantic")
MAX_RESULTS = 50
HEADERS = {
    # no script runs on these pages; nothing is loaded from elsewhere
    "content-security-policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",  # a POST of its own pages carries their Origin
    "cache-control": "no-store",
}
Handler = Callable[[Request, Identity], tuple[str, dict[str, Any]]]


COMPONENTS_FIRST = (
    "rerank_score",
    "text_score",
    "vector_score",
    "context_score",
    "session_score",
    "speaker_score",
    "graph_score",
    "time_score",
    "recency_score",
    "importance_weight",
)
"""The search page's component columns, the ones that weigh most first; others follow by name."""


def component_order(name: str) -> tuple[int, str]:
    return (COMPONENTS_FIRST.index(name) if name in COMPONENTS_FIRST else len(COMPONENTS_FIRST), name)


def when(moment: datetime | None) -> str:
    """A time as the view shows it in a table: to the minute, in UTC, saying so."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if moment is not None else ""


class WebView:
    """The pages of one read-only store, for the viewers ``login`` lets in."""

    def __init__(self, store: Store, login: Login, failed: FailedTokens) -> None:
        if not store.settings.read_only:
            raise ValueError("the web view needs a read-only store (Settings.read_only)")
        self.store = store
        self.db = store.db
        self.login_of = login
        self.failed = failed
        self.t = translator(store.settings.language)
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        self.templates.env.filters["when"] = when
        self.templates.env.filters["component"] = self.component
        self.templates.env.filters["kind"] = self.kind

    def kind(self, memory_type: str) -> str:
        """A memory type in the view's language (an unknown one by its name)."""
        key = f"type_{memory_type}"
        return self.t(key) if key in LABELS else memory_type

    def component(self, name: str) -> str:
        """A score component's column head in the view's language (an unknown one by its name)."""
        key = f"component_{name}"
        return self.t(key) if key in LABELS else name.removesuffix("_score").replace("_", " ")

    def render(self, request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
        base = {"t": self.t, "language": self.store.settings.language, "tokens": self.login_of.fixed is None}
        response = self.templates.TemplateResponse(request, name, {**base, **context}, status_code=status)
        response.headers.update(HEADERS)
        return response

    def page(self, handler: Handler) -> Callable[[Request], Response]:
        """A page for a logged-in viewer: its template and context, or a page that says what went
        wrong (400 naming the field, 404)."""

        def endpoint(request: Request) -> Response:
            session = self.login_of.session(request)
            client = client_address(request.scope)
            # an open session goes through; an unknown one waits out its address's failures
            guessed = session is not None and self.login_of.sessions.token(session) is None
            wait = self.failed.blocked(client) if guessed else 0
            if wait:
                return self.too_many(request, wait)
            viewer = self.login_of.identity(self.db, request)
            if viewer is None and session:
                # a session that no longer works: 401, counted against the address, and forgotten
                self.failed.failed(client)
                failed = self.render(request, "login.html", {"viewer": None, "failed": True}, 401)
                self.login_of.end(request, failed)
                return failed
            if viewer is None:
                return RedirectResponse("/login", status_code=303)
            try:
                name, context = handler(request, viewer)
            except InvalidInputError as exc:
                return self.render(request, "error.html", _error(viewer, "bad_input", str(exc)), 400)
            except NotFoundError as exc:
                return self.render(request, "error.html", _error(viewer, "not_found", str(exc)), 404)
            return self.render(request, name, {"viewer": viewer, **context})

        return endpoint

    # ------------------------------------------------------------------ login

    def missing(self, request: Request, exc: Exception) -> Response:
        """404 for an address the view has no page at: a page of the view, not a bare line."""
        viewer = self.login_of.identity(self.db, request)
        return self.render(request, "error.html", _error(viewer, "not_found", self.t("page_missing")), 404)

    def too_many(self, request: Request, wait: float) -> Response:
        """429: the address's credentials failed too often in the last minute."""
        response = self.render(request, "login.html", {"viewer": None, "failed": True}, 429)
        response.headers["retry-after"] = str(int(wait) + 1)
        return response

    def login_form(self, request: Request) -> Response:
        return self.render(request, "login.html", {"viewer": None, "failed": False})

    async def login(self, request: Request) -> Response:
        form = await request.form(max_files=0, max_fields=4, max_part_size=4096)
        token = str(form.get("token") or "").strip()
        client = client_address(request.scope)
        wait = self.failed.admits(client, token or None)
        if wait:
            return self.too_many(request, wait)
        viewer = await run_in_threadpool(identity_of_token, self.db, token) if token else None
        if viewer is None:
            if token:
                self.failed.failed(client)
            return self.render(request, "login.html", {"viewer": None, "failed": True}, 401)
        wait = self.login_of.sessions.login_wait(token)
        if wait:  # a token that logs in again and again: its sessions would churn everyone's
            return self.too_many(request, wait)
        response = RedirectResponse("/memories", status_code=303)
        self.failed.worked(token)
        self.login_of.start(response, token)
        return response

    def logout(self, request: Request) -> Response:
        response = RedirectResponse("/login", status_code=303)
        self.login_of.end(request, response)
        return response

    # ------------------------------------------------------------------ pages

    def memories(self, request: Request, viewer: Identity) -> tuple[str, dict[str, Any]]:
        filters = reads.ListFilters.parse(request.query_params)
        page = reads.memory_page(self.db, viewer, filters)
        counts, sessions = reads.overview(self.db, viewer, with_counts=filters.before_at is None)
        query = filters.query_string()
        next_link = f"?{urlencode({**query, 'before': page.next_cursor})}" if page.next_cursor else None
        return "memories.html", {
            "page": page,
            "filters": filters,
            "counts": counts,
            "sessions": sessions,
            "types": reads.TYPES,
            "next_link": next_link,
            "first_link": f"?{urlencode(query)}" if filters.before_at else None,
        }

    def memory(self, request: Request, viewer: Identity) -> tuple[str, dict[str, Any]]:
        try:
            memory_id = UUID(request.path_params["memory_id"])
        except ValueError:
            raise InvalidInputError("memory_id", "must be a memory id (a UUID)") from None
        found = reads.memory_detail(self.db, viewer, memory_id)
        if found is None:
            raise no_such("memory", memory_id, self.store.settings.language)
        return "memory.html", {"memory": found}

    def search(self, request: Request, viewer: Identity) -> tuple[str, dict[str, Any]]:
        params = request.query_params
        text = (params.get("q") or "").strip()
        scoring = check_scoring(params.get("scoring") or "hybrid")
        limit = _int(params.get("limit"), "limit", 10, 1, MAX_RESULTS)
        valid_at = reads.parse_time(params.get("valid_at"), "valid_at")
        known_at = reads.parse_time(params.get("known_at"), "known_at")
        context: dict[str, Any] = {
            "query": text,
            "scoring": scoring,
            "limit": limit,
            "hits": None,
            "valid_at": valid_at,
            "known_at": known_at,
        }
        if not text:
            return "search.html", context
        memory = self.store.memory(viewer.user_id, types=SEARCH_TYPES)
        asked = MemorySearch(text, SEARCH_TYPES, limit, scoring=scoring, valid_at=valid_at, known_at=known_at)
        hits, sent = memory.search_explained(asked)
        names = sorted({name for hit in hits for name in hit.components}, key=component_order)
        context.update(hits=hits, components=names, time_range=None, sql=None)
        if sent is not None:
            with self.db.connection() as conn:
                literal = sent.literal(conn)
            named = (sent.params.get("time_from"), sent.params.get("time_to"))
            context.update(
                time_range=named if named[0] is not None else None,
                sql=sent.text.strip(),
                sql_params={name: _shown(value) for name, value in sent.params.items()},
                sql_literal=literal,
            )
        return "search.html", context

    def graph(self, request: Request, viewer: Identity) -> tuple[str, dict[str, Any]]:
        params = request.query_params
        entity = (params.get("entity") or "").strip()
        depth = _int(params.get("depth"), "depth", 1, 1, 3)
        source, target = (params.get("from") or "").strip(), (params.get("to") or "").strip()
        memory = self.store.memory(viewer.user_id, types=("semantic",))
        context: dict[str, Any] = {
            "entity": entity,
            "depth": depth,
            "source": source,
            "target": target,
            "top": reads.top_entities(self.db, viewer),
            "drawing": None,
            "path": None,
            "missing": None,
        }
        try:
            if source and target:
                steps = memory.graph_path(source, target)
                context.update(path=steps, drawing=drawing.path_drawing(steps) if steps else None)
            elif entity:
                found = memory.graph_neighbourhood(entity, depth)
                if found is None:
                    raise no_such("entity", entity, self.store.settings.language)
                context.update(drawing=drawing.neighbourhood_drawing(found))
        except NotFoundError as exc:  # the page stays, with its forms and the known entities
            context["missing"] = str(exc)
        return "graph.html", context

    def knowledge(self, request: Request, viewer: Identity) -> tuple[str, dict[str, Any]]:
        return "knowledge.html", {"namespaces": reads.namespaces(self.db, viewer)}

    def documents(self, request: Request, viewer: Identity) -> tuple[str, dict[str, Any]]:
        namespace = request.path_params["namespace"]
        return "documents.html", {
            "namespace": namespace,
            "documents": reads.documents(self.db, viewer, namespace),
        }

    def document(self, request: Request, viewer: Identity) -> tuple[str, dict[str, Any]]:
        namespace, document_id = request.path_params["namespace"], request.path_params["document_id"]
        found, chunks = reads.document(self.db, viewer, namespace, document_id)
        if found is None:
            raise no_such("document", document_id, self.store.settings.language)
        return "document.html", {"namespace": namespace, "document": found, "chunks": chunks}

    def stats(self, request: Request, viewer: Identity) -> tuple[str, dict[str, Any]]:
        found = reads.statistics(self.db, viewer)
        chart = drawing.monthly_bars(found["monthly"])
        return "stats.html", {**found, "chart": chart, "colours": drawing.TYPE_COLOURS}

    def routes(self) -> list[Route | Mount]:
        return [
            Route("/", lambda request: RedirectResponse("/memories", status_code=303)),
            Route("/login", self.login_form, methods=["GET"]),
            Route("/login", self.login, methods=["POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Route("/memories", self.page(self.memories)),
            Route("/memories/{memory_id}", self.page(self.memory)),
            Route("/search", self.page(self.search)),
            Route("/graph", self.page(self.graph)),
            Route("/knowledge", self.page(self.knowledge)),
            Route("/knowledge/{namespace}", self.page(self.documents)),
            Route("/knowledge/{namespace}/{document_id:path}", self.page(self.document)),
            Route("/stats", self.page(self.stats)),
            Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
        ]


def _error(viewer: Identity | None, title: str, message: str) -> dict[str, Any]:
    return {"viewer": viewer, "title": title, "message": message}


def _shown(value: Any) -> str:
    """A parameter as the page shows it: a vector by its size, anything else as it is sent."""
    if hasattr(value, "shape") or hasattr(value, "to_list"):
        return f"[{len(value)} values]"
    return "NULL" if value is None else str(value)


def _int(value: str | None, name: str, default: int, low: int, high: int) -> int:
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        raise InvalidInputError(name, f"must be an integer between {low} and {high}") from None
    if not low <= number <= high:
        raise InvalidInputError(name, f"must be an integer between {low} and {high}")
    return number


def same_origin_posts(app: Any) -> Any:
    """ASGI middleware: a POST must come from a page of this server (its Origin, else its Referer,
    names the Host it was sent to), or it gets 403: no other site can log a browser in or out."""

    async def checked(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers") or []}
            source = headers.get("origin") or headers.get("referer") or ""
            sent_to = headers.get("host", "")
            parsed = urlsplit(source)
            if source == "null" or not parsed.netloc or parsed.netloc.lower() != sent_to.lower():
                response = Response("cross-site request refused\n", status_code=403, media_type="text/plain")
                await response(scope, receive, send)
                return
        await app(scope, receive, send)

    return checked


def ui_app(
    store: Store,
    login: Login | None = None,
    *,
    hosts: Iterable[str] = (),
    bind_host: str = "127.0.0.1",
    failed_logins_per_minute: int = 10,
) -> Any:
    """The web view's ASGI application on ``store`` (read-only): for ``login.fixed`` alone, or for
    the holders of bearer tokens (an address whose tokens or sessions keep failing waits a minute).
    It answers requests for the Host names a server bound to ``bind_host`` should (loopback names
    on loopback, else ``hosts``) and POSTs from its own pages only."""
    failed = FailedTokens(failed_logins_per_minute)
    view = WebView(store, login or Login(), failed)
    app = Starlette(routes=view.routes(), exception_handlers={404: view.missing})
    app.state.view = view
    return check_host(same_origin_posts(app), allowed_hosts(bind_host, hosts))
