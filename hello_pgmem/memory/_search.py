"""The search of memories across types (what it looks for: :class:`._search_request.MemorySearch`):
the one statement ranking the long-term types together (:mod:`._search_sql`), working memory
ranked by its own scoring, one merged list, its accesses logged, the search recorded in the
retrieval log. The chapter's per-type formulas (``scoring="reference"``) are :mod:`._reference`."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

import numpy as np

from hello_pgmem import embedding_queue
from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import MemoryItem
from hello_pgmem.core.results import Degraded, Results
from hello_pgmem.db import Conn
from hello_pgmem.db.retrieval_log import log_retrieval
from hello_pgmem.memory import _optional_stages as stages
from hello_pgmem.memory import _queries as q
from hello_pgmem.memory import _reference as reference
from hello_pgmem.memory._parts import MemoryParts
from hello_pgmem.memory._rows import memory_from_row
from hello_pgmem.memory._search_request import MemorySearch
from hello_pgmem.memory._search_sql import SearchSQL, statement


def run(parts: MemoryParts, sent: SearchSQL, log_access: bool = False) -> list[MemoryItem]:
    """Send a statement in one round trip, its accesses logged in it (on Citus, which runs the
    function whole on the user's worker and refuses its INSERT … SELECT, in its transaction)."""
    db, user_id = parts.db, parts.user_id
    if not db.citus or sent.delegated is None:
        rows = db.rows_in_one_trip(user_id, sent.text, sent.params, before=sent.before)
    else:
        with db.transaction(user_id, pipeline=True) as conn:
            rows = db.call_rows(conn, sent.text, sent.delegated, sent.params)
            if log_access:  # in the search's transaction, on the same worker
                log_accesses(parts, conn, [row[0] for row in rows], sent.params["now"])
    return [memory_from_row(user_id, sent.columns, row) for row in rows]


def run_counting_waits(
    parts: MemoryParts, sent: SearchSQL, log_access: bool, degraded: list[Degraded]
) -> tuple[list[MemoryItem], int, list[Degraded]]:
    """``run`` for a model whose vectors are made after the write: the user's waiting rows are
    counted first in the same transaction and round trip, and when they call for a catch-up the
    statement logs nothing (``LOGGED_UNLESS_CATCHING_UP``); the search then embeds them and runs
    again, as ``stages.waiting_rows`` does before a search. The memories found, how many rows
    wait, and the stages left out (``degraded`` and the catch-up's)."""
    db, user_id = parts.db, parts.user_id
    model = parts.registered_embedder.model_name
    counted = embedding_queue.pending_query("memory", user_id, model, embedding_queue.search_catch_up(db))
    waits, ranked = db.reads_in_one_trip(user_id, [counted, (sent.text, sent.params)], sent.before)
    waiting = embedding_queue.Pending(*waits[0])
    left, caught = stages.waiting_rows(parts, waiting)  # embeds the few waiting rows when due
    if waiting.due:  # the statement logged nothing: it runs again, with their vectors
        return run(parts, sent, log_access), left, [*degraded, *caught]
    return [memory_from_row(user_id, sent.columns, row) for row in ranked], left, degraded


def run_search(parts: MemoryParts, search: MemorySearch, track_access: bool = True) -> Results[MemoryItem]:
    """The best ``limit`` memories of a checked search (each type at most ``per_type_limit``), best
    first: working memory by its own scoring, a file query by its modality's space, the long-term
    types by one statement (or each by the reference's formula). With ``track_access`` an access
    of each long-term one is logged (never for an as-of search: it reads the past). A reranker or
    a query embedder that fails is left out and said in the results, never raised.

    Long because the stages of one search (catch-up, query vector, the statements per type,
    reranking, access and retrieval logs) each add one short step to one flow."""
    started = time.perf_counter()
    track_access = track_access and search.as_of is None
    wanted = search.limit
    reranker = parts.reranker if search.scoring != "reference" else None
    if reranker is not None:  # the second stage reorders a wider first stage
        wider = max(wanted, parts.settings.rerank_top_n)
        per_type = wider if search.per_type_limit == wanted else search.per_type_limit
        search = dataclasses.replace(search, limit=wider, per_type_limit=per_type)
    results: list[MemoryItem] = []
    degraded: list[Degraded] = []
    waiting = 0
    if "working" in search.types:
        results += parts.working.retrieve(
            search.query,
            search.per_type_limit or search.limit,
            min_importance=search.floor,
            since=search.since,
            until=search.until,
        )
    logged = False
    if search.query_modality != "text":
        results += reference.by_file(parts, search)
    elif any(kind != "working" for kind in search.types):
        # the queue is counted in the ranking's own round trip where the ranking is one statement
        counted_here = bool(search.long_term()[0]) and not parts.embeds_now and not parts.db.citus
        waiting, degraded = (0, []) if counted_here else stages.waiting_rows(parts)
        vector = stages.query_vector(parts, search.ranked_text, degraded)
        if vector is None:  # ranked by words alone, the vector a placeholder of the right shape
            search = dataclasses.replace(search, scoring="lexical")
            vector = np.eye(1, parts.registered_embedder.dimension, dtype=np.float32)[0]
        joint, separate = search.long_term()
        logged = track_access and not results and not separate and reranker is None
        if joint:
            sent = statement(parts, search, joint, vector, logged)
            if counted_here:
                found, waiting, degraded = run_counting_waits(parts, sent, logged, degraded)
                results += found
            else:
                results += run(parts, sent, logged)
        for kind in separate:
            if search.scoring == "reference":
                results += reference.ranked(parts, search, kind, vector)
            else:  # perceptual memory of the asked modality, by the same ranking
                sent = statement(parts, search, [kind], vector, False, modality=search.target_modality)
                results += run(parts, sent)
    results = best_first(results, search.limit)
    if reranker is not None:
        results = stages.reranked(reranker, search.query, results, degraded)[:wanted]
    if track_access and not logged:
        record_access(parts, [item.id for item in results if item.memory_type != "working"])
    elapsed_ms = (time.perf_counter() - started) * 1000
    log_retrieval(
        parts.db, parts.user_id, "memory", search.query, [(i.id, i.score) for i in results], elapsed_ms
    )
    return Results(results, waiting, degraded)


def best_first(results: list[MemoryItem], limit: int) -> list[MemoryItem]:
    """The ``limit`` best of results merged from several rankings: by score, then importance."""
    results.sort(key=lambda item: (-(item.score or 0.0), -item.importance, str(item.id)))
    return results[:limit]


def sent_statement(parts: MemoryParts, search: MemorySearch) -> SearchSQL:
    """The statement the long-term part of a checked search sends (not run). Working memory is
    ranked in Python and a file query by the reference's formula: neither has one."""
    joint, separate = search.long_term()
    if not joint or separate or search.query_modality != "text":
        raise InvalidInputError(
            "memory_types", "a search of long-term memory with a text query has SQL to show"
        )
    return statement(parts, search, joint, parts.registered_embedder.encode_query(search.query), False)


def explained(parts: MemoryParts, search: MemorySearch) -> tuple[list[MemoryItem], SearchSQL | None]:
    """The long-term search of a checked search (no access logged) and the one statement it sent,
    the query embedded once; None for the reference's scoring, which ranks each type by itself."""
    if search.long_term()[1]:
        return run_search(parts, search, track_access=False), None
    sent = sent_statement(parts, search)
    return best_first(run(parts, sent), search.limit), sent


def record_access(parts: MemoryParts, memory_ids: Sequence[UUID]) -> None:
    """Log one access (and its time) for each memory: one round trip, nothing written to memories
    (``fold_accesses`` moves the log into the counters; maintain and decay run it)."""
    if memory_ids:
        with parts.db.transaction(parts.user_id, pipeline=True) as conn:
            log_accesses(parts, conn, memory_ids, parts.clock())


def log_accesses(parts: MemoryParts, conn: Conn, memory_ids: Sequence[UUID], now: datetime) -> None:
    """Log one access of each memory, in the caller's transaction: to the UNLOGGED access log,
    never to ``memories`` (``fold_accesses`` moves the log into the counters)."""
    rows = [{"memory_id": memory_id} for memory_id in memory_ids]
    parts.db.insert_rows(
        conn, q.LOG_ONE_ACCESS, q.LOG_ACCESS, rows, ("memory_id",), user_id=parts.user_id, now=now
    )
