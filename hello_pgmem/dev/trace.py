"""Round trips and statements of an action, counted from a libpq trace (benchmarks and tests)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from hello_pgmem.db import Database


def count_round_trips(db: Database, action: Callable[[], Any]) -> dict[str, int]:
    """Round trips and statements (Execute/Query messages) of ``action``.

    A round trip is a wait for the server: the client sent messages and then reads answers (a
    change from frontend to backend messages in the trace). A pipeline that fetches rows before
    its COMMIT takes two, although it ends with one Sync and one ReadyForQuery. The pool of
    ``db`` must hold one connection, so that ``action`` runs on the traced one.
    """
    with tempfile.NamedTemporaryFile("w+", suffix=".trace") as trace:
        with db.connection() as conn:
            traced = conn.pgconn
        traced.trace(trace.fileno())
        traced.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS | psycopg.pq.Trace.REGRESS_MODE)
        try:
            action()
        finally:
            traced.untrace()
        trace.seek(0)
        lines = Path(trace.name).read_text().splitlines()
    sides = "".join(line[0] for line in lines if line[:1] in ("F", "B"))  # who sent each message
    return {
        "round_trips": sides.count("FB"),
        "statements": sum(
            1 for line in lines if line.startswith("F") and ("\tExecute" in line or "\tQuery" in line)
        ),
    }
