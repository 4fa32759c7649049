"""The Cypher passthrough: a caller's read-only query on the AGE graph, run as the Cypher read role.

PostgreSQL keeps the caller to its own user: the query runs after ``SET LOCAL ROLE`` to the read
role (``PGMEM_CYPHER_ROLE``), whose restrictive policies on every label table show only the rows of
the transaction's user (revision 0016), whatever the query's text says. The passthrough refuses to
run where those policies are missing.

Three things the policies cannot cover are refused on the query's tokens (strings and comments
skipped) before it reaches the server:

- clauses that write: AGE 1.5 runs ``SET`` and ``DELETE`` in its own executor, without the table's
  UPDATE or DELETE privilege and without the policies' write checks;
- calls of anything but AGE's own Cypher functions: a qualified call reaches any SQL function,
  and ``pg_catalog.set_config('role', …)`` would leave the read role within the query;
- casts to ``::vertex``, ``::edge`` and ``::path``: ``startNode``, ``endNode`` and AGE's
  variable-length paths read the label tables by graph id, past the policies, so a forged value
  could name another user's vertex.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from psycopg import errors, sql

from hello_pgmem.core.errors import GraphError, InvalidInputError
from hello_pgmem.core.settings import Settings
from hello_pgmem.db import Conn
from hello_pgmem.db.age import cypher

_TOKEN = re.compile(
    r"""(?P<skip>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/|\s+)
    |(?P<quoted>`[^`]*`)
    |(?P<name>[^\W\d]\w*)
    |(?P<cast>::)
    |(?P<other>.)""",
    re.S | re.X | re.U,
)
WRITES = frozenset({"create", "merge", "set", "delete", "detach", "remove", "call", "load"})
# fmt: off
KEYWORDS = frozenset(
    {
        "match", "optional", "where", "return", "with", "and", "or", "not", "xor", "in", "unwind", "as",
        "distinct", "case", "when", "then", "else", "end", "is", "null", "order", "by", "skip", "limit",
        "asc", "desc", "ascending", "descending", "union", "all", "starts", "ends", "contains",
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


def _tokens(query: str) -> Iterator[tuple[str, str]]:
    """(kind, text) of each token that means something: strings, comments and spaces skipped."""
    for match in _TOKEN.finditer(query):
        kind = match.lastgroup
        if kind != "skip":
            text = match.group()
            yield ("name", text[1:-1]) if kind == "quoted" else (kind or "other", text)


def refusals(query: str) -> list[str]:
    """Why ``query`` may not run as a caller's read (empty when it may)."""
    tokens = list(_tokens(query))
    writes: set[str] = set()
    found: list[str] = []
    for i, (kind, text) in enumerate(tokens):
        before = tokens[i - 1][1] if i else ""
        after = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        word = text.lower()
        if kind == "name" and word in WRITES and before != ".":
            writes.add(text.upper())
        elif kind == "name" and after == "(" and word not in KEYWORDS:
            if before == ".":
                found.append(f"may not call SQL functions ({tokens[i - 2][1]}.{text})")
            elif word not in FUNCTIONS:
                found.append(f"may only call Cypher functions, not {text}()")
        elif kind == "cast" and after.lower() not in CASTS:
            found.append(f"may not cast to {after or 'nothing'} (only {', '.join(sorted(CASTS))})")
    if writes:
        found.insert(
            0,
            f"must only read the graph, found {', '.join(sorted(writes))} (the graph is a projection "
            "of the relational tables, written by the library)",
        )
    return found


def read_cypher(
    conn: Conn,
    settings: Settings,
    user_id: str,
    query: str,
    params: Mapping[str, Any] | None,
    columns: Sequence[str],
) -> list[tuple[Any, ...]]:
    """Run a caller's read-only Cypher as the read role in ``conn``'s transaction, which names
    ``user_id``: the policies show that user only. ``$user_id`` is bound to it for convenience."""
    refused = refusals(query)
    if refused:
        raise InvalidInputError("query", "; ".join(dict.fromkeys(refused)))
    graph, reader = settings.graph_name, settings.cypher_role
    row = conn.execute("SELECT graph_reader_ready(%s, %s)", (graph, reader)).fetchone()
    if not (row and row[0]):
        raise GraphError(
            f"the Cypher passthrough is off: the read role {reader!r} and the graph's row-level "
            "security are not set up (run hello-pgmem grant --app <role> --apply as a superuser)"
        )
    try:
        conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(reader)))
    except errors.InsufficientPrivilege as exc:
        raise GraphError(
            f"the connected role may not switch to the Cypher read role {reader!r} "
            "(run hello-pgmem grant --app <this role> --apply as a superuser)"
        ) from exc
    return cypher(conn, graph, query, {**(params or {}), "user_id": user_id}, tuple(columns))
