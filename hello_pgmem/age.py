"""Parameterised Cypher through Apache AGE's ``cypher()`` function.

The Cypher text is a constant written by a developer; every value travels in AGE's third
argument as an agtype map bound server-side by psycopg, so a value can never change the query.
Graph names and result column names cannot be parameters and are validated instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg import sql

from hello_pgmem.errors import GraphError
from hello_pgmem.settings import IDENTIFIER

_TAG = "$cypher$"


def _check_name(value: str, what: str) -> str:
    if not IDENTIFIER.match(value) or len(value) > 63:
        raise ValueError(f"{what} must match ^[A-Za-z_][A-Za-z0-9_]*$, got {value!r}")
    return value


def cypher_sql(graph: str, query: str, columns: Sequence[str]) -> sql.Composed:
    """The SQL statement that runs ``query`` on ``graph`` with one bound agtype parameter."""
    _check_name(graph, "graph name")
    if not columns:
        raise ValueError("columns must name at least one result column")
    if _TAG in query:
        raise ValueError(f"a Cypher query may not contain {_TAG!r}")
    return sql.SQL(
        "SELECT * FROM ag_catalog.cypher({graph}, {query}, %s::ag_catalog.agtype) AS ({cols})"
    ).format(
        graph=sql.Literal(graph),
        query=sql.SQL(_TAG + query + _TAG),
        cols=sql.SQL(", ").join(
            sql.SQL("{} ag_catalog.agtype").format(sql.Identifier(_check_name(c, "column name")))
            for c in columns
        ),
    )


def parse_agtype(value: object) -> Any:
    """An agtype result as Python: scalars, lists and maps; vertices and edges as maps."""
    if value is None:
        return None
    text = str(value)
    for suffix in ("::vertex", "::edge", "::path"):
        text = text.replace(suffix, "")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise GraphError(f"cannot read agtype value {text[:80]!r}") from exc


def cypher(
    conn: psycopg.Connection[Any],
    graph: str,
    query: str,
    params: Mapping[str, Any] | None = None,
    columns: Sequence[str] = ("result",),
) -> list[tuple[Any, ...]]:
    """Run parameterised Cypher; ``$name`` in ``query`` refers to ``params["name"]``."""
    statement = cypher_sql(graph, query, columns)
    payload = json.dumps(dict(params or {}), ensure_ascii=False, allow_nan=False)
    try:
        rows = conn.execute(statement, (payload,)).fetchall()
    except psycopg.errors.UndefinedFunction as exc:
        raise GraphError("Apache AGE is not installed in this database: Cypher is unavailable") from exc
    return [tuple(parse_agtype(v) for v in row) for row in rows]


_LITERALS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`|//[^\n]*|/\*.*?\*/", re.S)
_WRITE_CLAUSES = re.compile(r"\b(CREATE|MERGE|SET|DELETE|DETACH|REMOVE|CALL|LOAD)\b", re.I)


def write_clauses(query: str) -> list[str]:
    """The clauses of ``query`` that could write (or call out), ignoring strings and comments.

    AGE 1.5 runs ``SET`` and ``DELETE`` even in a read-only transaction, without the table's
    UPDATE or DELETE privilege and without row-level security's write checks, so a query that
    must only read is refused on its text before it reaches the server.
    """
    stripped = _LITERALS.sub(" ", query)
    return sorted({m.upper() for m in _WRITE_CLAUSES.findall(stripped)})
