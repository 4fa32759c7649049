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
