"""Batches of rows as statements: one array per column for ``unnest``, or multi-row ``VALUES``."""

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from psycopg.types.json import Jsonb


def as_columns(rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> dict[str, list[Any]]:
    """Rows as one list per key, the parameters of ``INSERT … SELECT … FROM unnest(…)``. A column
    that is NULL in every row is sent empty: unnest pads the shorter arrays with NULLs, and an
    array of NULLs alone has no type to send. A list value is sent as JSON: an array of arrays
    must be rectangular."""
    columns = {
        key: [Jsonb(v) if isinstance(v, list) else v for v in (row[key] for row in rows)] for key in keys
    }
    return {key: [] if all(v is None for v in values) else values for key, values in columns.items()}


_ROW_VALUES = re.compile(r"\bVALUES\s*(\((?:[^()]|\([^()]*\))*\))", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"%\((\w+)\)s")
_MAX_PARAMETERS = 30_000  # of a statement (the protocol's limit is 65,535)


ROWS_PER_STATEMENT = 1_000


def insert_rows(
    conn: Any,
    citus: bool,
    one: str,
    many: str,
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str],
    common: Mapping[str, Any],
) -> None:
    """Insert ``rows`` with ``common`` parameters in the caller's transaction: as ``many``
    statements (``INSERT … SELECT FROM unnest(…)`` of ``as_columns``: one plan, one firing of
    statement triggers) of at most ``ROWS_PER_STATEMENT`` rows each, so that no statement of a
    large batch runs into the statement timeout (10,000 memories with their HNSW and text
    index entries took 27–37 s as one), or the single-row ``one`` for a single row. On Citus, which
    runs ``INSERT … SELECT`` as a COPY that row-level security refuses, ``one`` with many rows in
    its ``VALUES`` (:func:`values_statements`): one statement routed to the rows' shard."""
    if not rows:
        return
    if len(rows) == 1:
        conn.execute(one, {**common, **rows[0]})
    elif citus:
        for statement, params in values_statements(one, rows, common):
            conn.execute(statement, params)
    else:
        for start in range(0, len(rows), ROWS_PER_STATEMENT):
            batch = rows[start : start + ROWS_PER_STATEMENT]
            conn.execute(many, {**common, **as_columns(batch, columns)})


def values_statements(
    one: str, rows: Sequence[Mapping[str, Any]], common: Mapping[str, Any]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """``one``, a single-row ``INSERT … VALUES (…)``, as multi-row ``VALUES`` statements with their
    parameters: each row's own placeholders numbered (``%(id)s`` becomes ``%(id_3)s``), the
    ``common`` ones shared; as many rows per statement as the parameter limit allows."""
    found = _ROW_VALUES.search(one)
    if found is None:
        raise ValueError("a single-row INSERT ... VALUES (...) statement is needed")
    template, own = found.group(1), set(rows[0])
    per_statement = max(1, _MAX_PARAMETERS // max(1, len(own)))
    for start in range(0, len(rows), per_statement):
        batch = rows[start : start + per_statement]
        values = ", ".join(
            _PLACEHOLDER.sub(
                lambda m, i=i: f"%({m.group(1)}_{i})s" if m.group(1) in own else m.group(0), template
            )
            for i in range(len(batch))
        )
        params = {
            **common,
            **{f"{key}_{i}": value for i, row in enumerate(batch) for key, value in row.items()},
        }
        yield one[: found.start(1)] + values + one[found.end(1) :], params
