"""Every statement that ranks memories across types: the hybrid search's call of
``search_memories`` (with and without logging the accesses), its lean vector statement, the as-of
search and the nearest neighbours of a vector (the reference's per-type searches are
:mod:`._reference`'s). Callers bind parameters and never compose SQL of their own."""

from __future__ import annotations

import functools

from psycopg import sql

from hello_pgmem.memory._queries import COLUMNS

HYBRID_SCORES = (
    "vector_score",
    "text_score",
    "context_score",
    "session_score",
    "speaker_score",
    "graph_score",
    "time_score",
    "recency_score",
)
"""The components search_memories returns between ``COLUMNS`` and importance_weight, score."""

SEARCH_COLUMNS = (*COLUMNS.split(", "), *HYBRID_SCORES, "importance_weight", "score")
"""The columns of ``SEARCH`` (and of ``vector_ranked``), in order."""

AS_OF_COLUMNS = (
    *COLUMNS.split(", "),
    "vector_score",
    "text_score",
    "recency_score",
    "importance_weight",
    "score",
    "version_id",
)
"""The columns of ``SEARCH_AS_OF``, in order."""

SEARCH_AS_OF = f"""
SELECT coalesce(m.version_of, s.id) AS id, {", ".join("s." + c for c in AS_OF_COLUMNS[1:-1])},
       CASE WHEN m.version_of IS NOT NULL THEN s.id END AS version_id
FROM search_memories_as_of(
    p_user_id => %(user_id)s, p_model => %(model)s, p_query => %(query)s, p_query_text => %(query_text)s,
    p_limit => %(limit)s, p_filter => %(filter)s, p_valid_at => coalesce(%(valid_at)s::timestamptz, now()),
    p_known_at => coalesce(%(known_at)s::timestamptz, now())) AS s
JOIN memories m ON m.user_id = %(user_id)s AND m.id = s.id
ORDER BY s.score DESC, s.importance DESC, s.id
"""
"""A search of what held at ``valid_at`` as known at ``known_at`` (docs/temporal.md): each hit by
its memory's id, and an earlier version's own id as ``version_id``."""

_SEARCH_ARGUMENTS = """
    p_user_id => %(user_id)s, p_model => %(model)s, p_query => %(query)s, p_query_text => %(query_text)s,
    p_limit => %(limit)s, p_filter => %(filter)s, p_space => %(space)s, p_now => %(now)s,
    p_names => %(names)s, p_seeds => %(seeds)s, p_max_hops => %(max_hops)s, p_time_from => %(time_from)s,
    p_time_to => %(time_to)s, p_mode => %(mode)s, p_fusion => %(fusion)s, p_per_type => %(per_type)s,
    p_vector_weight => %(vector_weight)s"""
"""search_memories' arguments, by name; ``filter`` a MemoryFilter."""
_SEARCH_CALL = f"search_memories({_SEARCH_ARGUMENTS})"

SEARCH = f"""
SELECT {", ".join(SEARCH_COLUMNS)}
FROM {_SEARCH_CALL}
"""

SEARCH_DELEGATED = f"SELECT {_SEARCH_CALL}"
"""``SEARCH`` as Citus delegates it, whole, to the worker that holds the user (``Database.call_rows``)."""

LOGGED_UNLESS_CATCHING_UP = "current_setting('pgmem.catch_up_due', true) IS DISTINCT FROM 'true'"
"""Whether a search logs the accesses of what it returns: always, unless the user's waiting rows,
counted earlier in its transaction (the queue's ``pending`` statement), call for a catch-up: the
search then runs again after it, and that one logs."""

_LOGGED = f""", logged AS (
    INSERT INTO memory_accesses (user_id, memory_id, accessed_at)
    SELECT %(user_id)s, a.id, %(now)s FROM answer a
    WHERE {LOGGED_UNLESS_CATCHING_UP}
)"""
"""The access of each memory of a statement's ``answer`` logged, unless a catch-up is due; a
statement that logs nothing has no INSERT, so that it runs in a read-only transaction too."""

_ANSWERED = "SELECT * FROM answer ORDER BY score DESC, id\n"
"""The end of every statement that ranks into ``answer``."""

SEARCH_AND_LOG = f"""
WITH answer AS MATERIALIZED ({SEARCH}){_LOGGED}
{_ANSWERED}"""
"""``SEARCH`` that also logs an access of every memory it returns, in the same statement."""

_VECTOR_RANKED = """
WITH nearest AS MATERIALIZED (  -- the pool, whole rows
{scan}
), found AS MATERIALIZED (
    SELECT s.id, s.memory_type, s.content, s.importance, s.session_id, s.modality, s.metadata,
           s.created_at, s.vector_n AS vector_score, 0::float8 AS text_score, 0::float8 AS context_score,
           0::float8 AS session_score, 0::float8 AS speaker_score, 0::float8 AS graph_score,
           s.in_time::float8 AS time_score, s.recency AS recency_score, importance_weight(s.importance),
           ranking_score(vector_relevance(s.vector_n, s.in_time), s.recency, s.importance) AS score,
           s.candidates
    FROM (SELECT n.*, coalesce(n.similarity / nullif(max(n.similarity) OVER (), 0), 0) AS vector_n,
                 count(*) OVER () AS candidates,
                 in_time_range(n.created_at, %(time_from)s, %(time_to)s) AS in_time,
                 memory_recency(%(now)s, n.created_at) AS recency
          FROM (SELECT *, greatest(0, 1 - distance) AS similarity FROM nearest) AS n) AS s
    ORDER BY score DESC, s.id
    LIMIT %(limit)s
), answer AS MATERIALIZED (  -- a short scan is not the answer: the function's exact fallback is
    SELECT {columns} FROM found
    WHERE (SELECT coalesce(max(candidates), 0) FROM found) >= {pool}
    UNION ALL
    SELECT {columns} FROM {call}
    WHERE (SELECT coalesce(max(candidates), 0) FROM found) < {pool}
){tail}
"""

_VECTOR_ROW = ", ".join("m." + column for column in COLUMNS.split(", "))
_VECTOR_DISTANCE = "m.embedding::{type}({dimension}) <=> %(query)s::{type}({dimension})"
_VECTOR_KEPT = """m.user_id = %(user_id)s AND m.embedding_model = {model} AND m.forgotten_at IS NULL
           AND m.memory_type = ANY (%(types)s)"""

EXACT_SCAN = "current_setting('pgmem.exact_scan', true)"
"""Whether ``vector_ranked`` reads the user exactly: set by ``VECTOR_SCAN`` (vector_scan_plan())."""

VECTOR_SCAN = """
SELECT num_nonnulls(
           set_config('hnsw.ef_search', s.ef::text, true),
           set_config('pgmem.exact_scan', s.exact::text, true),
           set_config('hnsw.iterative_scan', 'relaxed_order', true),
           set_config('plan_cache_mode', 'force_generic_plan', true),
           set_config('enable_sort', 'off', true),
           set_config('enable_seqscan', 'off', true),
           set_config('jit', 'off', true)) AS settings
FROM vector_scan_plan(%(user_id)s, %(model)s, coalesce(%(pool)s, hybrid_vector_pool(%(limit)s))) AS s
"""
"""The settings of ``vector_ranked``'s and ``pooled_hybrid``'s transaction: the HNSW scan's (those
memory_candidates sets, for ``pool`` rows or, None, the hybrid's ``hybrid_vector_pool(limit)``),
whether the user is read exactly (``EXACT_SCAN``, by vector_scan_plan() as memory_candidates decides),
and one plan for every user. The statement is prepared on its connection and kept as a generic plan
(planning it took as long as running it), which must not depend on the user who prepared it: with
sorts and sequential scans forbidden, the only plan left reads a user through the HNSW index or
through the user's index, as the setting says, however many rows the planner guesses a user has (a
guess from the average user, in a generic plan). Forbidden, they still run where nothing else
can, at a cost that would start JIT compiling: JIT is off too. search_memories, called when a
scan is short, turns both back on for itself."""


@functools.cache
def vector_ranked(model: str, dimension: int, logged: bool) -> str:
    """``search_memories(…, p_mode => 'vector')`` of episodic and semantic memories, without filters,
    as one plain statement: the same rows and scores in ``SEARCH``'s columns, planned once per
    connection (``VECTOR_SCAN``) where the function's dynamic SQL is planned on every call.
    ``pool`` is the function's: the limit, or, None, ``hybrid_vector_pool(limit)`` when the query
    names a time (``time_from``, ``time_to``), which lifts a memory in that range. A user with at
    most ``exact_scan_rows()`` live memories is read exactly, as memory_candidates does: both
    branches are planned, a one-time filter on ``EXACT_SCAN`` runs one. An HNSW scan can come back
    with fewer than the pool: the statement then answers with the function itself (``SEARCH``'s
    parameters), whose exact fallback fills it, and the function is not run otherwise. The scan
    returns the pool's rows whole, so nothing is joined to it. With ``logged`` it logs an access
    of each memory it returns. Its transaction runs ``VECTOR_SCAN`` first."""
    return _composed(
        _VECTOR_RANKED,
        model,
        dimension,
        logged,
        call=sql.SQL(_SEARCH_CALL),
        whole_rows=True,
        pool=sql.SQL("coalesce(%(pool)s::integer, hybrid_vector_pool(%(limit)s))"),
    )


_POOLED_HYBRID = """
WITH nearest AS MATERIALIZED (  -- the vector branch's pool, as memory_candidates would find it
{scan}
), pool AS (  -- a short HNSW scan is no pool: the function then finds it, with its exact fallback
    SELECT array_agg(n.id ORDER BY n.distance) AS ids,
           array_agg(1 - n.distance ORDER BY n.distance) AS cosines
    FROM nearest n
    HAVING count(*) >= hybrid_vector_pool(%(limit)s) OR {exact} = 'true'
), answer AS MATERIALIZED (
    SELECT {columns} FROM {call}
){tail}
"""

_SCAN = """    (SELECT {row}, {distance} AS distance FROM memories m
     WHERE {kept} AND {exact} IS DISTINCT FROM 'true'
     ORDER BY {distance} LIMIT {pool})
    UNION ALL  -- a user of at most exact_scan_rows(): read exactly (+ 0 keeps the planner off the index)
    (SELECT {exact_row}, n.distance
     FROM (SELECT m.id, {distance} AS distance FROM memories m
           WHERE {kept} AND {exact} = 'true'
           ORDER BY ({distance}) + 0 LIMIT {pool}) AS n{by_key})"""
"""The scan of a user's nearest memories: through the HNSW index, or exactly as ``EXACT_SCAN`` says.
The exact read sorts ids and distances, and reads the pool's rows whole after it, by key."""

_BY_KEY = """
     CROSS JOIN LATERAL (SELECT * FROM memories x
                         WHERE x.user_id = %(user_id)s AND x.id = n.id OFFSET 0) AS m"""
"""The exact read's rows whole, by key (a generic plan cannot make it a scan of the user's rows)."""

_POOLED_CALL = f"""search_memories({_SEARCH_ARGUMENTS},
    p_nearest => (SELECT p.ids FROM pool p), p_nearest_cosines => (SELECT p.cosines FROM pool p))"""
"""``_SEARCH_CALL`` handed the pool that ``_POOLED_HYBRID`` found."""


@functools.cache
def pooled_hybrid(model: str, dimension: int, logged: bool) -> str:
    """``SEARCH`` of episodic and semantic memories without filters, its vector branch's pool found
    by a scan planned once per connection (``VECTOR_SCAN``) and handed to search_memories
    (``p_nearest``), which otherwise finds it with dynamic SQL planned on every call: the same
    rows, read exactly or through the HNSW index as vector_scan_plan() says. A short HNSW scan hands
    nothing, and the function finds the pool itself. With ``logged`` it logs an access of each
    memory it returns."""
    return _composed(
        _POOLED_HYBRID,
        model,
        dimension,
        logged,
        call=sql.SQL(_POOLED_CALL),
        whole_rows=False,
        pool=sql.SQL("hybrid_vector_pool(%(limit)s)"),
    )


def _composed(
    template: str,
    model: str,
    dimension: int,
    logged: bool,
    call: sql.Composable,
    whole_rows: bool,
    pool: sql.Composable,
) -> str:
    """``template`` with the model's scan filled in: the filters, the distance in the type and typmod
    of its index (halfvec above 2,000 dimensions, as ``vector_type_for``), the model a literal so
    that the planner matches its partial HNSW index."""
    kind = "halfvec" if dimension > 2000 else "vector"
    vector = {"type": sql.SQL(kind), "dimension": sql.Literal(int(dimension)), "model": sql.Literal(model)}
    distance = sql.SQL(_VECTOR_DISTANCE).format(**vector)
    kept = sql.SQL(_VECTOR_KEPT).format(**vector)
    row = sql.SQL(_VECTOR_ROW if whole_rows else "m.id")
    scan = sql.SQL(_SCAN).format(
        row=row,
        exact_row=row if whole_rows else sql.SQL("n.id"),
        by_key=sql.SQL(_BY_KEY if whole_rows else ""),
        distance=distance,
        kept=kept,
        exact=sql.SQL(EXACT_SCAN),
        pool=pool,
    )
    tail = sql.SQL(_LOGGED if logged else "")
    composed = sql.SQL(template + _ANSWERED).format(
        scan=scan,
        exact=sql.SQL(EXACT_SCAN),
        columns=sql.SQL(", ").join(map(sql.Identifier, SEARCH_COLUMNS)),
        call=call,
        tail=tail,
        pool=pool,
    )
    return composed.as_string()  # composed once: each search sends the same text


NEAREST = """
SELECT c.id, c.vector_score, m.content, m.memory_type
FROM memory_candidates(p_user_id => %(user_id)s, p_model => %(model)s, p_query => %(query)s,
                       p_pool => %(pool)s, p_filter => %(filter)s) AS c
JOIN memories m ON m.user_id = %(user_id)s AND m.id = c.id
ORDER BY c.vector_score DESC
"""
