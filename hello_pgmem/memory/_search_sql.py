"""The one statement that ranks a search's long-term types, as it is sent: ``search_memories``
(lexical, vector and graph branches, a time the query names favoured), called with the vector pool
a planned scan found or alone, its lean vector form, or the as-of search; with its parameters (the
filters, the names the query gives, the time it names, the mode and the fusion) and the settings of
its transaction (:class:`SearchSQL`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from psycopg import ClientCursor

from hello_pgmem.core.filters import MemoryFilter
from hello_pgmem.core.models import Scoring, check_scoring
from hello_pgmem.db import Conn
from hello_pgmem.graph.normalize import name_candidates
from hello_pgmem.memory import _ranked_queries as rq
from hello_pgmem.memory._counting import asks_for_a_count
from hello_pgmem.memory._parts import MemoryParts
from hello_pgmem.memory._when import time_range as named_time_range

if TYPE_CHECKING:
    from hello_pgmem.memory._search_request import MemorySearch


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
        """The statements with their parameters as literals, to paste into psql as they are: in
        one transaction that sets the connection's search_path and names the user, as row-level
        security needs of an application role."""
        cursor = ClientCursor(conn)
        row = conn.execute("SELECT current_setting('search_path')").fetchone()
        scope = [
            ("SELECT set_config('search_path', %(path)s, true)", {"path": row[0] if row else "public"}),
            ("SELECT set_config('pgmem.user_id', %(user_id)s, true)", {"user_id": self.params["user_id"]}),
        ]
        sent = [*scope, *self.before, (self.text, self.params)]
        return "BEGIN;\n" + ";\n".join(cursor.mogrify(text, params) for text, params in sent) + ";\nCOMMIT;"


def statement(
    parts: MemoryParts,
    search: MemorySearch,
    types: Sequence[str],
    vector: np.ndarray,
    log_access: bool,
    *,
    modality: str | None = None,
) -> SearchSQL:
    """The one statement that ranks ``types`` for ``search``: ``search_memories`` (lexical, vector
    and graph branches, a time the query names favoured), its lean vector form, or with ``as_of``
    the search of what held then, as known then. An unfiltered search of episodic and semantic
    memories is planned once per connection (not on Citus, which delegates the function call):
    the vector form whole, the hybrid's vector pool found by a planned scan and handed to the
    function. With ``log_access`` it also logs an access of each memory it returns; with
    ``modality``, perceptual memories of that modality alone, by their descriptions."""
    embedder = parts.registered_embedder
    kept = MemoryFilter(
        memory_types=list(types),
        session_id=search.session_id,
        since=search.since,
        until=search.until,
        min_importance=search.floor,
        modality=modality,
    )
    common = {
        "user_id": parts.user_id,
        "model": embedder.model_name,
        "query": vector,
        "query_text": search.ranked_text,
        "limit": search.limit,
        "types": list(types),
        "filter": kept,
    }
    as_of = search.as_of
    if as_of is not None:
        return SearchSQL(rq.SEARCH_AS_OF, {**common, **as_of.params()}, columns=rq.AS_OF_COLUMNS)
    scoring = check_scoring(search.scoring or parts.config.scoring)
    params = {**common, **_ranking_params(parts, search, scoring, modality)}
    planned = not parts.db.citus and set(types) <= {"episodic", "semantic"} and not kept.beyond_types()
    if planned and params["mode"] == "hybrid":  # the vector branch's pool found by a planned scan
        settings = (rq.VECTOR_SCAN, {**_scan_params(parts), "pool": None, "limit": search.limit})
        text = rq.pooled_hybrid(embedder.model_name, embedder.dimension, log_access)
        return SearchSQL(text, params, [settings])
    lean = (
        planned
        and params["mode"] == "vector"
        and (search.per_type_limit is None or search.per_type_limit >= search.limit)
    )
    if not lean:
        text = rq.SEARCH_AND_LOG if log_access and not parts.db.citus else rq.SEARCH
        return SearchSQL(text, params, delegated=rq.SEARCH_DELEGATED)
    pool = search.limit if params["time_from"] is None else None  # None: hybrid_vector_pool(limit)
    settings = (rq.VECTOR_SCAN, {**_scan_params(parts), "pool": pool, "limit": search.limit})
    text = rq.vector_ranked(embedder.model_name, embedder.dimension, log_access)
    return SearchSQL(text, {**params, "pool": pool}, [settings])


def _scan_params(parts: MemoryParts) -> dict[str, Any]:
    """``VECTOR_SCAN``'s user and model (its pool and limit are the search's)."""
    return {"user_id": parts.user_id, "model": parts.registered_embedder.model_name}


def fusion_params(parts: MemoryParts, query: str) -> dict[str, Any]:
    """The fusion of the hybrid search (the config's, else the embedder's) and its vector weight
    (the config's, else None: the fusion's own); a spread search that asks for a count ranks by
    minmax (the vector undamped, at its weight)."""
    fusion = parts.config.fusion or parts.registered_embedder.fusion
    weight = parts.config.vector_weight
    if fusion == "spread" and weight is None and asks_for_a_count(query):
        fusion = "minmax"
    return {
        "fusion": fusion,
        "vector_weight": weight,  # None: the fusion's own (ranking_weights())
    }


def _ranking_params(
    parts: MemoryParts, search: MemorySearch, scoring: Scoring, modality: str | None
) -> dict[str, Any]:
    """``search_memories``' parameters beyond the query's and its filter: the space, the names the
    query gives (speakers and graph seeds), the time it names, the mode and the fusion."""
    config, now = parts.config, parts.clock()
    named = named_time_range(search.query, now)
    names = None if scoring == "vector" else name_candidates(search.ranked_text)
    return {
        "space": "text" if modality is None else "text_embedding",
        "now": now,
        "names": names,
        "seeds": names if config.graph_search else None,
        "max_hops": 2,
        "time_from": named[0] if named else None,
        "time_to": named[1] if named else None,
        "mode": "hybrid" if scoring == "reference" else scoring,
        **fusion_params(parts, search.ranked_text),
        "per_type": search.per_type_limit,
    }
