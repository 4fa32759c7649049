"""The one search of long-term memories across types: ``search_memories`` in SQL (or its lean
vector statement), the parameters it is called with, its rows as memories, and the accesses of
what it returns, logged in the same statement.

:func:`statement` says what a search sends (``search_sql`` and ``hello-pgmem search --show-sql``
show it); :func:`run` sends it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

import numpy as np
from psycopg import ClientCursor

from hello_pgmem.core.models import Fusion, MemoryItem, Scoring
from hello_pgmem.db import Conn, Database
from hello_pgmem.embedding import Embedder
from hello_pgmem.graph.normalize import name_candidates
from hello_pgmem.graph.store import AsOf
from hello_pgmem.memory import queries as q
from hello_pgmem.memory import ranked_queries as rq
from hello_pgmem.memory.rows import memory_from_row
from hello_pgmem.memory.when import time_range


@dataclass(frozen=True)
class Filters:
    """What narrows a search before it ranks: session, time, importance, modality."""

    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    min_importance: float | None = None
    modality: str | None = None

    def any(self) -> bool:
        values = (self.session_id, self.since, self.until, self.min_importance, self.modality)
        return any(v is not None for v in values)


@dataclass(frozen=True)
class SearchSQL:
    """A search as it is sent: ``before`` (settings of its transaction), then ``text`` with
    ``params``."""

    text: str
    params: dict[str, Any]
    before: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    columns: tuple[str, ...] = rq.SEARCH_COLUMNS
    delegated: str | None = None
    """The call as Citus delegates it to the user's worker (``Database.call_rows``), for a
    statement that calls ``search_memories``; None: sent as it is everywhere."""

    def literal(self, conn: Conn) -> str:
        """The statements with their parameters as literals, to paste into psql."""
        cursor = ClientCursor(conn)
        sent = [*self.before, (self.text, self.params)]
        return ";\n".join(cursor.mogrify(text, params) for text, params in sent) + ";"


def statement(
    db: Database,
    user_id: str,
    embedder: Embedder,
    query: str,
    limit: int,
    *,
    types: Sequence[str],
    vector: np.ndarray | None = None,
    now: datetime,
    scoring: Scoring = "hybrid",
    fusion: Fusion = "weighted",
    graph_search: bool = True,
    per_type: int | None = None,
    filters: Filters = Filters(),
    space: str = "text",
    max_hops: int = 2,
    log_access: bool = False,
    as_of: AsOf | None = None,
) -> SearchSQL:
    """The statement of a hybrid search of ``user_id``'s memories of ``types``: lexical, vector
    and graph branches; a time the query names is favoured. With ``log_access`` the statement
    also logs an access of each memory it returns. With ``as_of``, the search of what held then,
    as known then (``search_memories_as_of``)."""
    if as_of is not None:
        text_query = embedder.encode_one(query) if vector is None else vector
        return as_of_statement(user_id, embedder.model_name, text_query, query, limit, types, filters, as_of)
    named_time = time_range(query, now)
    names = None if scoring == "vector" else name_candidates(query)  # speakers and graph seeds
    params: dict[str, Any] = {
        "user_id": user_id,
        "model": embedder.model_name,
        "query": embedder.encode_one(query) if vector is None else vector,
        "query_text": query,
        "limit": limit,
        "types": list(types),
        "session_id": filters.session_id,
        "since": filters.since,
        "until": filters.until,
        "min_importance": filters.min_importance,
        "modality": filters.modality,
        "space": space,
        "now": now,
        "names": names,
        "seeds": names if graph_search else None,
        "max_hops": max_hops,
        "time_from": named_time[0] if named_time else None,
        "time_to": named_time[1] if named_time else None,
        "mode": "hybrid" if scoring == "reference" else scoring,
        "fusion": fusion,
        "per_type": per_type,
    }
    lean = not db.citus and _lean(scoring, space, types, per_type, limit, filters)
    if not lean:
        text = rq.SEARCH_AND_LOG if log_access and not db.citus else rq.SEARCH
        return SearchSQL(text, params, delegated=rq.SEARCH_DELEGATED)
    pool = limit if params["time_from"] is None else max(40, limit)
    settings = (rq.VECTOR_SCAN, {"model": embedder.model_name, "pool": pool})
    text = rq.vector_ranked(embedder.model_name, embedder.dimension)
    return SearchSQL(text, {**params, "pool": pool, "log": log_access}, [settings])


def as_of_statement(
    user_id: str,
    model: str,
    vector: np.ndarray,
    query: str,
    limit: int,
    types: Sequence[str],
    filters: Filters,
    as_of: AsOf,
) -> SearchSQL:
    """The statement of a search of what held at ``as_of.valid_at`` as known at
    ``as_of.known_at`` (``search_memories_as_of``)."""
    params = {
        "user_id": user_id,
        "model": model,
        "query": vector,
        "query_text": query,
        "limit": limit,
        "types": list(types),
        "min_importance": filters.min_importance,
        **as_of.params(),
    }
    return SearchSQL(rq.SEARCH_AS_OF, params, columns=rq.AS_OF_COLUMNS)


def _lean(
    scoring: Scoring, space: str, types: Sequence[str], per_type: int | None, limit: int, filters: Filters
) -> bool:
    """Whether the search is what ``vector_ranked`` states as one plain statement: the vector
    ranking of episodic and semantic memories, unfiltered."""
    return (
        scoring == "vector"
        and space in ("text", "embedding")
        and set(types) <= {"episodic", "semantic"}
        and (per_type is None or per_type >= limit)
        and not filters.any()
    )


def run(db: Database, user_id: str, search: SearchSQL, log_access: bool = False) -> list[MemoryItem]:
    """Send ``search`` in one round trip, its accesses logged in it (on Citus, which runs the
    function whole on the user's worker and refuses its INSERT … SELECT, in its transaction)."""
    if not db.citus or search.delegated is None:
        rows = db.rows_in_one_trip(user_id, search.text, search.params, before=search.before)
    else:
        with db.transaction(user_id, pipeline=True) as conn:
            rows = db.call_rows(conn, search.text, search.delegated, search.params)
            if log_access:  # in the search's transaction, on the same worker
                log_accesses(db, conn, user_id, [row[0] for row in rows], search.params["now"])
    return [memory_from_row(user_id, search.columns, row) for row in rows]


def log_accesses(db: Database, conn: Conn, user_id: str, memory_ids: Sequence[UUID], now: datetime) -> None:
    """Log one access of each memory, in the caller's transaction: to the UNLOGGED access log,
    never to ``memories`` (``fold_accesses`` moves the log into the counters)."""
    rows = [{"memory_id": memory_id} for memory_id in memory_ids]
    db.insert_rows(conn, q.LOG_ONE_ACCESS, q.LOG_ACCESS, rows, ("memory_id",), user_id=user_id, now=now)
