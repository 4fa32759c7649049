"""The Cypher passthrough: a caller's read-only query on the AGE graph, run as the Cypher read role.

PostgreSQL keeps the caller to its own user: the query runs after ``SET LOCAL ROLE`` to the read
role (``PGMEM_CYPHER_ROLE``), whose restrictive policies on every label table show only the rows of
the transaction's user, whatever the query's text says. The passthrough refuses to
run where those policies are missing.

What the policies cannot cover is checked on the query's tokens, as AGE's own scanner finds them
(:mod:`hello_pgmem.graph.cypher_scanner`), and AGE is then sent the query written again from
those tokens: no comment, odd whitespace or escape of the caller's ever reaches it, so what runs
is what was checked. Refused:

- clauses that write: AGE 1.5 runs ``SET`` and ``DELETE`` in its own executor, without the table's
  UPDATE or DELETE privilege and without the policies' write checks;
- calls of anything but AGE's own Cypher functions: a qualified call reaches any SQL function,
  and ``pg_catalog.set_config('role', …)`` would leave the read role within the query;
- casts to anything but numbers and booleans (``::vertex``, ``::edge``, ``::path``, ``::pg_…``):
  ``startNode``, ``endNode`` and AGE's variable-length paths read the label tables by graph id,
  past the policies, so a forged value could name another user's vertex;
- ``EXPLAIN`` in any form: a plan's row estimates count every user's rows of a label, and
  ``ANALYZE``'s timing grows with them.

Behind the check: the transaction is always rolled back, its statements end at
``PGMEM_CYPHER_TIMEOUT_MS``, its connection is closed afterwards (no setting, lock or role of the
session outlives the call), and a result that holds a vertex or an edge of another user fails.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from psycopg import errors, sql

from hello_pgmem.core.errors import GraphError, InvalidInputError
from hello_pgmem.core.settings import IDENTIFIER
from hello_pgmem.db import Database
from hello_pgmem.db.age import DOLLAR_TAG, Edge, Path, Vertex, cypher
from hello_pgmem.graph.cypher_scanner import ScanError, Token, emit, scan

MAX_QUERY_CHARS = 20_000
MAX_PARAM_DEPTH = 32
WRITES = frozenset({"create", "merge", "set", "delete", "detach", "remove", "call", "load"})
# fmt: off
KEYWORDS = frozenset(
    # AGE 1.5's keywords (cypher_kwlist.h) that do not write: one followed by "(" is no call
    {
        "all", "analyze", "and", "as", "asc", "ascending", "by", "case", "coalesce", "contains",
        "desc", "descending", "distinct", "else", "end", "ends", "exists", "explain", "false", "in",
        "is", "limit", "match", "not", "null", "optional", "or", "order", "return", "skip", "starts",
        "then", "true", "union", "unwind", "verbose", "when", "where", "with", "xor", "yield",
    }
)
FUNCTIONS = frozenset(
    # AGE 1.5's Cypher functions, less those that read the graph by id from a value (vertex_stats)
    # and the variable-length path internals
    {
        "id", "start_id", "end_id", "type", "label", "labels", "properties", "keys", "nodes",
        "relationships", "length", "size", "head", "last", "tail", "range", "reverse", "startnode",
        "endnode", "exists", "coalesce", "timestamp", "tostring", "tostringlist", "toboolean",
        "tobooleanlist", "tofloat", "tofloatlist", "tointeger", "tointegerlist", "tolower", "toupper",
        "ltrim", "rtrim", "trim", "left", "right", "substring", "replace", "split", "abs", "ceil",
        "floor", "round", "sign", "rand", "sqrt", "exp", "log", "log10", "e", "pi", "sin", "cos", "tan",
        "asin", "acos", "atan", "atan2", "cot", "degrees", "radians", "haversin", "count", "sum", "avg",
        "min", "max", "collect", "stdev", "stdevp", "percentilecont", "percentiledisc", "isempty",
        "any", "none", "single",
    }
)
# fmt: on
CASTS = frozenset({"numeric", "float", "int", "integer", "bool", "boolean"})
_NAMES = ("name", "quoted")


def refusals(query: str) -> list[str]:
    """Why ``query`` may not run as a caller's read (empty when it may)."""
    try:
        tokens = scan(query)
    except ScanError as exc:
        return [f"cannot be read as Apache AGE reads it: {exc}"]
    return _token_refusals(tokens)


def _token_refusals(tokens: Sequence[Token]) -> list[str]:
    writes: set[str] = set()
    found: list[str] = []
    for i, token in enumerate(tokens):
        before = tokens[i - 1].value if i else ""
        after = tokens[i + 1] if i + 1 < len(tokens) else None
        word = token.value.lower()
        named = token.kind in _NAMES
        if named and word in WRITES and before != ".":
            writes.add(token.value.upper())
        elif named and word == "explain" and before != ".":
            found.append("may not EXPLAIN: a plan's estimates count every user's rows")
        elif named and after is not None and after.value == "(" and word not in KEYWORDS:
            if before == ".":
                found.append(f"may not call SQL functions ({tokens[i - 2].value}.{token.value})")
            elif word not in FUNCTIONS:
                found.append(f"may only call Cypher functions, not {token.value}()")
        elif token.kind == "op" and token.value == "::":
            target = after.value if after is not None and after.kind in _NAMES else None
            if target is None or target.lower() not in CASTS:
                found.append(f"may not cast to {target or 'nothing'} (only {', '.join(sorted(CASTS))})")
    if writes:
        found.insert(
            0,
            f"must only read the graph, found {', '.join(sorted(writes))} (the graph is a projection "
            "of the relational tables, written by the library)",
        )
    return found


def checked_query(query: str) -> str:
    """The query AGE is sent: ``query`` written again from its tokens once they pass every check;
    :class:`InvalidInputError` naming the field ``query`` when they do not."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("query", "must be a non-empty Cypher query")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInputError("query", f"must be at most {MAX_QUERY_CHARS} characters")
    try:
        tokens = scan(query)
    except ScanError as exc:
        raise InvalidInputError("query", f"cannot be read as Apache AGE reads it: {exc}") from None
    refused = _token_refusals(tokens)
    if refused:
        raise InvalidInputError("query", "; ".join(dict.fromkeys(refused)))
    written = emit(tokens)
    if DOLLAR_TAG in written:
        raise InvalidInputError("query", f"may not contain {DOLLAR_TAG!r} outside a string")
    if [(t.kind, t.value) for t in scan(written)] != [(t.kind, t.value) for t in tokens]:
        raise InvalidInputError("query", "could not be written again token for token: refused")
    return written


def check_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The parameters as a plain dict of JSON values: strings without NUL and valid Unicode, finite
    numbers, nesting at most ``MAX_PARAM_DEPTH``; anything else names ``params`` and its rule."""
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise InvalidInputError("params", "must be a mapping of parameter names to values")
    stack: list[tuple[Any, int]] = [(params, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_PARAM_DEPTH:
            raise InvalidInputError("params", f"may nest at most {MAX_PARAM_DEPTH} levels")
        if isinstance(value, Mapping):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise InvalidInputError("params", "keys must be strings")
                _check_text(key, "keys")
                stack.append((item, depth + 1))
        elif isinstance(value, (list, tuple)):
            stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, str):
            _check_text(value, "strings")
        elif isinstance(value, float) and not math.isfinite(value):
            raise InvalidInputError("params", "numbers must be finite (no NaN or infinity)")
        elif value is not None and not isinstance(value, bool | int | float):
            raise InvalidInputError(
                "params",
                "values must be JSON (strings, numbers, booleans, null, lists, maps), "
                f"not {type(value).__name__}",
            )
    return dict(params)


def _check_text(text: str, what: str) -> None:
    if "\x00" in text:
        raise InvalidInputError("params", f"{what} may not contain the NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError("params", f"{what} must be valid Unicode (no lone surrogates)") from exc


def check_columns(columns: Sequence[str]) -> tuple[str, ...]:
    """The result's column names: at least one, each a plain identifier."""
    if isinstance(columns, str) or not columns:
        raise InvalidInputError("columns", "must be a list of one or more column names")
    for name in columns:
        if not isinstance(name, str) or not IDENTIFIER.match(name) or len(name) > 63:
            raise InvalidInputError(
                "columns", f"must be names matching ^[A-Za-z_][A-Za-z0-9_]*$, got {name!r}"
            )
    return tuple(columns)


def _graph_values(value: Any) -> Iterator[Vertex]:
    """Every vertex and edge inside a result value (lists, maps and paths walked)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Vertex):  # an Edge is a Vertex too
            yield item
            stack.extend(item.properties.values())
        elif isinstance(item, (list, Path)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())


def check_owner(rows: list[tuple[Any, ...]], user_id: str) -> None:
    """Fail when a row holds a vertex or an edge that is not ``user_id``'s."""
    for row in rows:
        for value in row:
            for found in _graph_values(value):
                if found.properties.get("user_id") != user_id:
                    kind = "an edge" if isinstance(found, Edge) else "a vertex"
                    raise GraphError(f"the query returned {kind} of another user: refused")


def read_cypher(
    db: Database,
    user_id: str,
    query: str,
    params: Mapping[str, Any] | None,
    columns: Sequence[str],
) -> list[tuple[Any, ...]]:
    """Run a caller's read-only Cypher as the read role, in a transaction that names ``user_id``
    and is rolled back, on a connection closed afterwards. ``$user_id`` is bound to the user."""
    written = checked_query(query)
    values = {**check_params(params), "user_id": user_id}
    columns = check_columns(columns)
    settings = db.settings
    graph, reader = settings.graph_name, settings.cypher_role
    with db.throwaway_transaction(user_id) as conn:
        row = conn.execute("SELECT graph_reader_ready(%s, %s)", (graph, reader)).fetchone()
        if not (row and row[0]):
            raise GraphError(
                f"the Cypher passthrough is off: the read role {reader!r} and the graph's row-level "
                "security are not set up (run hello-pgmem grant --app <role> --apply as a superuser)"
            )
        db.limit_statements(conn, settings.cypher_timeout_ms)
        try:
            conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(reader)))
        except errors.InsufficientPrivilege as exc:
            raise GraphError(
                f"the connected role may not switch to the Cypher read role {reader!r} "
                "(run hello-pgmem grant --app <this role> --apply as a superuser)"
            ) from exc
        rows = cypher(conn, graph, written, values, tuple(columns))
    check_owner(rows, user_id)
    return rows
