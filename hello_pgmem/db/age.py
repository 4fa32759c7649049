"""Parameterised Cypher through Apache AGE's ``cypher()`` function.

The Cypher text is a constant written by a developer; every value travels in AGE's third
argument as an agtype map bound server-side by psycopg, so a value can never change the query.
Graph names and result column names cannot be parameters and are validated instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import psycopg
from psycopg import sql

from hello_pgmem.core.errors import GraphError
from hello_pgmem.core.settings import IDENTIFIER

DOLLAR_TAG = "$cypher$"
"""The dollar quote a query travels in: no query may contain it."""


def _check_name(value: str, what: str) -> str:
    if not IDENTIFIER.match(value) or len(value) > 63:
        raise ValueError(f"{what} must match ^[A-Za-z_][A-Za-z0-9_]*$, got {value!r}")
    return value


def cypher_sql(graph: str, query: str, columns: Sequence[str]) -> sql.Composed:
    """The SQL statement that runs ``query`` on ``graph`` with one bound agtype parameter."""
    _check_name(graph, "graph name")
    if not columns:
        raise ValueError("columns must name at least one result column")
    if DOLLAR_TAG in query:
        raise ValueError(f"a Cypher query may not contain {DOLLAR_TAG!r}")
    return sql.SQL(
        "SELECT * FROM ag_catalog.cypher({graph}, {query}, %s::ag_catalog.agtype) AS ({cols})"
    ).format(
        graph=sql.Literal(graph),
        # "%" is Cypher's modulo operator, not a driver placeholder
        query=sql.SQL(DOLLAR_TAG + query.replace("%", "%%") + DOLLAR_TAG),
        cols=sql.SQL(", ").join(
            sql.SQL("{} ag_catalog.agtype").format(sql.Identifier(_check_name(c, "column name")))
            for c in columns
        ),
    )


class Vertex(dict[str, Any]):
    """A vertex of a Cypher result: a map with ``id``, ``label`` and ``properties``."""

    @property
    def label(self) -> str:
        return str(self["label"])

    @property
    def properties(self) -> dict[str, Any]:
        value: dict[str, Any] = self.get("properties", {})
        return value


class Edge(Vertex):
    """An edge of a Cypher result: a map with ``id``, ``label``, ``start_id``, ``end_id``, ``properties``."""


class Path(list[Any]):
    """A path of a Cypher result: vertices and edges, alternating."""


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|::([A-Za-z_]+)|[{\[\]}]')
_NUMBER_END = re.compile(r"(-?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|NaN|Infinity))\s*$")
_MARK = "\x00agtype"  # AGE strings never hold NUL (PostgreSQL text cannot): a marker no value has
_JSON_MARK = "\\u0000agtype"
_TYPED = ("vertex", "edge", "path")


def parse_agtype(value: object) -> Any:
    """An agtype result as Python: scalars, lists and maps; a vertex as :class:`Vertex`, an edge
    as :class:`Edge`, a path as :class:`Path`, a ``::numeric`` as :class:`~decimal.Decimal`.

    Type annotations are read only outside string values (an entity named ``a::vertex`` keeps
    its name); NaN and infinities come back as floats.
    """
    if value is None:
        return None
    text = str(value)
    try:
        return _typed(json.loads(_marked(text)))
    except (json.JSONDecodeError, IndexError) as exc:  # the value may be another user's: not said
        raise GraphError("the query returned an unexpected value, which cannot be read as agtype") from exc


def _marked(text: str) -> str:
    """The agtype text as JSON: each annotation dropped, or turned into a marker value."""
    out: list[str] = []
    opened: list[int] = []  # where in ``out`` each open { or [ stands
    closed: int | None = None  # where the value that just closed was opened, while nothing followed
    last = 0
    for token in _TOKENS.finditer(text):
        between = text[last : token.start()]
        last = token.end()
        piece, kind = token.group(0), token.group(1)
        if kind == "numeric":
            between = _NUMBER_END.sub(lambda m: f'"{_JSON_MARK}numeric:{m.group(1)}"', between)
        if between.strip():
            closed = None
        out.append(between)
        if kind is not None:
            if kind in _TYPED and closed is not None:
                empty = not "".join(out[closed + 1 : -2]).strip()
                mark = f'"{_JSON_MARK}:{kind}"' + (": true" if out[closed] == "{" else "")
                out[-2] = f"{'' if empty else ', '}{mark}{out[-2]}"
            closed = None
        elif piece in ("{", "["):
            opened.append(len(out))
            out.append(piece)
            closed = None
        elif piece in ("}", "]"):
            closed = opened.pop()
            out.append(piece)
        else:  # a string value, copied as it is
            out.append(piece)
            closed = None
    out.append(text[last:])
    return "".join(out)


def _typed(value: Any) -> Any:
    """Decoded JSON with the markers of :func:`_marked` made into typed values."""
    if isinstance(value, dict):
        kind = None
        for key in [k for k in value if k.startswith(_MARK)]:
            kind = key.split(":", 1)[1]
            del value[key]
        items = {k: _typed(v) for k, v in value.items()}
        return Vertex(items) if kind == "vertex" else Edge(items) if kind == "edge" else items
    if isinstance(value, list):
        if value and isinstance(value[-1], str) and value[-1] == f"{_MARK}:path":
            return Path(_typed(v) for v in value[:-1])
        return [_typed(v) for v in value]
    if isinstance(value, str) and value.startswith(f"{_MARK}numeric:"):
        return Decimal(value.split(":", 1)[1])
    return value


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
    except (psycopg.ProgrammingError, psycopg.DataError, psycopg.InternalError) as exc:
        # a syntax error, an unknown label or variable, a bad value: the query's fault
        raise GraphError(f"the Cypher query failed: {' '.join(str(exc).split())}") from exc
    return [tuple(parse_agtype(v) for v in row) for row in rows]
