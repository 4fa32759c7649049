"""What the pages show, read from the database: each function is one read-only transaction scoped
to the viewer, returning rows as dictionaries for the templates."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, time
from typing import Any
from uuid import UUID

from psycopg.rows import dict_row

from hello_pgmem import embedding_queue
from hello_pgmem.access import Identity
from hello_pgmem.core.errors import InvalidInputError, no_such
from hello_pgmem.core.filters import MemoryFilter
from hello_pgmem.core.models import LONG_TERM_TYPES, MEMORY_TYPES
from hello_pgmem.db import Database
from hello_pgmem.graph import queries as graph_queries
from hello_pgmem.memory import history
from hello_pgmem.ui import queries as q

TYPES = MEMORY_TYPES
PAGE_SIZE = 50


@dataclass(frozen=True)
class ListFilters:
    """The memory list's filters, from the page's query string."""

    memory_type: str | None = None
    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    min_importance: float | None = None
    live_only: bool = False
    before_at: datetime | None = None
    before_id: UUID | None = None

    @classmethod
    def parse(cls, query: Mapping[str, str]) -> ListFilters:
        """Filters from a query string; InvalidInputError names a field whose value is wrong."""
        kind = query.get("type") or None
        if kind is not None and kind not in TYPES:
            raise InvalidInputError("type", f"must be one of {', '.join(TYPES)}")
        importance = _number(query.get("min_importance"), "min_importance")
        if importance is not None and not 0 <= importance <= 1:
            raise InvalidInputError("min_importance", "must be between 0 and 1")
        before_at, before_id = None, None
        if query.get("before"):
            stamp, _, ident = query["before"].partition("_")
            before_at = parse_time(stamp, "before")
            try:
                before_id = UUID(ident)
            except ValueError:
                raise InvalidInputError("before", "must be a page cursor of this list") from None
        session = (query.get("session") or "").strip() or None
        if session is not None and len(session) > 255:
            raise InvalidInputError("session", "must be at most 255 characters")
        until = parse_time(query.get("until"), "until")
        if until is not None and len(query.get("until", "")) == 10:  # a day: up to its end
            until = datetime.combine(until.date(), time.max, UTC)
        return cls(
            kind,
            session,
            parse_time(query.get("since"), "since"),
            until,
            importance,
            query.get("live") == "1",
            before_at,
            before_id,
        )

    def query_string(self) -> dict[str, str]:
        """The filters as query parameters (without the cursor), for links to the next page."""
        values = {
            "type": self.memory_type,
            "session": self.session_id,
            "since": self.since.date().isoformat() if self.since else None,
            "until": self.until.date().isoformat() if self.until else None,
            "min_importance": None if self.min_importance is None else f"{self.min_importance:g}",
            "live": "1" if self.live_only else None,
        }
        return {k: v for k, v in values.items() if v}


def _number(value: str | None, name: str) -> float | None:
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        raise InvalidInputError(name, "must be a number") from None


def parse_time(value: str | None, name: str) -> datetime | None:
    """A date or time from a form (ISO 8601; UTC when it names no zone), or None when empty."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInputError(name, "must be a date (YYYY-MM-DD) or an ISO 8601 time") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True)
class MemoryPage:
    rows: list[dict[str, Any]]
    next_cursor: str | None


def memory_page(db: Database, viewer: Identity, filters: ListFilters, size: int = PAGE_SIZE) -> MemoryPage:
    """One page of the user's memories, newest first, and the cursor of the next page."""
    params = {
        "user_id": viewer.user_id,
        "types": [filters.memory_type] if filters.memory_type else list(LONG_TERM_TYPES),
        "session_id": filters.session_id,
        "since": filters.since,
        "until": filters.until,
        "min_importance": filters.min_importance,
        "filter": MemoryFilter(
            session_id=filters.session_id,
            since=filters.since,
            until=filters.until,
            min_importance=filters.min_importance,
        ),
        "live_only": filters.live_only,
        "before_at": filters.before_at,
        "before_id": filters.before_id,
        "limit": size + 1,
    }
    statement = q.WORKING_PAGE if filters.memory_type == "working" else q.MEMORY_PAGE
    rows = _rows(db, viewer, statement, params)
    cursor = None
    if len(rows) > size:
        rows = rows[:size]
        last = rows[-1]
        cursor = f"{last['created_at'].isoformat()}_{last['id']}"
    return MemoryPage(rows, cursor)


def overview(
    db: Database, viewer: Identity, with_counts: bool = True
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The user's counts per type (they read every row: 50 ms at 100,000 memories, so only the
    first page asks) and their sessions, most recent first (an index-only scan)."""
    with db.transaction(viewer.user_id) as conn, conn.cursor(row_factory=dict_row) as cur:
        counts = cur.execute(q.TYPE_COUNTS, {"user_id": viewer.user_id}).fetchall() if with_counts else []
        sessions = cur.execute(q.SESSIONS, {"user_id": viewer.user_id}).fetchall()
    return counts, sessions


def memory_detail(db: Database, viewer: Identity, memory_id: UUID) -> dict[str, Any] | None:
    """One memory with its entities, relations, pending accesses and earlier versions."""
    params = {"user_id": viewer.user_id, "id": memory_id, "memory_id": memory_id}
    with db.transaction(viewer.user_id) as conn, conn.cursor(row_factory=dict_row) as cur:
        memory = cur.execute(q.MEMORY, params).fetchone()
        if memory is None:
            return None
        entities = conn.execute(graph_queries.ENTITIES_OF, params).fetchall()
        relations = conn.execute(q.MEMORY_RELATIONS, params).fetchall()
        pending = conn.execute(q.PENDING_ACCESSES, params).fetchone()
        lineage = memory["version_of"] or memory_id
        earlier = history(conn, viewer.user_id, lineage)
    return {
        **memory,
        "versions": earlier if len(earlier) > 1 else [],
        "entities": entities,
        "relations": relations,
        "accesses": memory["access_count"] + (pending[0] if pending else 0),
    }


def top_entities(db: Database, viewer: Identity, limit: int = 40) -> list[dict[str, Any]]:
    return _rows(db, viewer, q.TOP_ENTITIES, {"user_id": viewer.user_id, "limit": limit})


def statistics(db: Database, viewer: Identity) -> dict[str, Any]:
    """The analytics views of the user (and of each namespace it may read)."""
    params = {"user_id": viewer.user_id}
    with db.transaction(viewer.user_id) as conn, conn.cursor(row_factory=dict_row) as cur:
        counts = cur.execute(q.COUNTS, params).fetchall()
        monthly = cur.execute(q.MONTHLY, params).fetchall()
        entities = cur.execute(q.TOP_ENTITIES, {**params, "limit": 10}).fetchall()
        relations = cur.execute(q.RELATION_WEIGHTS, params).fetchall()
        waiting = [("memories", embedding_queue.scope_queue(conn, "memory", viewer.user_id))]
    for name in viewer.knowledge:
        with db.transaction(viewer.user_id, namespace=name) as conn:
            waiting.append((name, embedding_queue.scope_queue(conn, "chunk", name)))
    return {
        "counts": counts,
        "monthly": monthly,
        "entities": entities,
        "relations": relations,
        "namespaces": namespaces(db, viewer),
        "queue": waiting,
    }


def namespaces(db: Database, viewer: Identity) -> list[dict[str, Any]]:
    """Each namespace the viewer may read, with its totals (zeros when it holds nothing)."""
    found = []
    for name in viewer.knowledge:
        rows = _rows(db, viewer, q.NAMESPACES, {"namespace": name}, name)
        empty = {"namespace": name, "documents": 0, "chunks": 0, "tokens": 0, "last_ingest": None}
        found.append(rows[0] if rows else empty)
    return found


def documents(db: Database, viewer: Identity, namespace: str) -> list[dict[str, Any]]:
    _check_reads(db, viewer, namespace)
    return _rows(db, viewer, q.DOCUMENTS, {"namespace": namespace}, namespace)


def document(
    db: Database, viewer: Identity, namespace: str, document_id: str
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """A document and its chunks in order, with their heading paths."""
    _check_reads(db, viewer, namespace)
    params = {"namespace": namespace, "document_id": document_id}
    with (
        db.transaction(viewer.user_id, namespace=namespace) as conn,
        conn.cursor(row_factory=dict_row) as cur,
    ):
        found = cur.execute(q.DOCUMENT, params).fetchone()
        chunks = cur.execute(q.CHUNKS, params).fetchall() if found else []
    return found, chunks


def _check_reads(db: Database, viewer: Identity, namespace: str) -> None:
    """NotFoundError unless ``viewer`` may read ``namespace`` (one it may not does not exist for
    it)."""
    if namespace not in viewer.knowledge:
        raise no_such("namespace", namespace, db.settings.language)


def _rows(
    db: Database,
    viewer: Identity,
    statement: str,
    params: Mapping[str, Any],
    namespace: str | None = None,
) -> list[dict[str, Any]]:
    with (
        db.transaction(viewer.user_id, namespace=namespace) as conn,
        conn.cursor(row_factory=dict_row) as cur,
    ):
        return cur.execute(statement, params).fetchall()
