"""A search's filters are one value from Python to SQL: MemoryFilter travels whole as memory_filter,
one predicate applies it (_passes_filters), every search keeps what it says, and the signatures
stop growing: the stages are called by name, and no function takes more arguments than a screen
holds."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from hello_pgmem import Database
from hello_pgmem.core.filters import MemoryFilter
from hello_pgmem.memory import MemoryManager
from tests.conftest import Clock

ROOT = Path(__file__).resolve().parent.parent
SQL = ROOT / "sql"
MOST_ARGUMENTS = 16
SEARCH_MEMORIES_ARGUMENTS = 20
STAGES = ("memory_vector_pool", "memory_lexical_branch", "search_memories_by_vector")


def top_level_parts(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses and brackets."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


def balanced(text: str, opening: int) -> str:
    """What lies between the parenthesis at ``opening`` and its match."""
    depth = 0
    for i in range(opening, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[opening + 1 : i]
    raise AssertionError(f"unbalanced from {opening}")


def functions() -> dict[str, list[str]]:
    """Every function created in sql/ and sql/citus/, with its arguments."""
    found = {}
    for path in SQL.rglob("*.sql"):
        text = re.sub(r"--[^\n]*", "", path.read_text(encoding="utf-8"))
        for match in re.finditer(r"CREATE OR REPLACE FUNCTION (\w+)\s*\(", text):
            arguments = balanced(text, match.end() - 1)
            found[match.group(1)] = [a for a in top_level_parts(arguments) if a.strip()]
    return found


def test_no_function_takes_more_arguments_than_a_screen_holds() -> None:
    taken = {name: len(arguments) for name, arguments in functions().items()}
    assert taken["search_memories"] <= SEARCH_MEMORIES_ARGUMENTS
    assert {n: k for n, k in taken.items() if n != "search_memories" and k > MOST_ARGUMENTS} == {}


WORKING_MEMORY_FILTERS = {"hello_pgmem/memory/_working.py": 1, "hello_pgmem/ui/queries.py": 1}
"""Working memory's own filters, on its own table (no metadata, no modality, nothing ranked with the
long-term types): the least importance in its search and in the web view's page of it."""


def test_the_filter_predicate_is_written_once() -> None:
    """The metadata predicate, the session prefix and the least importance are read from a filter
    in _passes_filters alone, in sql/ and in every statement of the package (but working
    memory's, above)."""
    pieces = (r"jsonb_path_match\(", r"starts_with\([\w.]*session_id", r"IS NULL OR [\w.]*importance\s*>=")
    places: dict[str, int] = {}
    for path in [*SQL.rglob("*.sql"), *(ROOT / "hello_pgmem").rglob("*.py")]:
        text = path.read_text(encoding="utf-8")
        found = sum(len(re.findall(piece, text)) for piece in pieces)
        if found:
            places[path.relative_to(ROOT).as_posix()] = found
    assert places == {"sql/filters.sql": len(pieces), **WORKING_MEMORY_FILTERS}


@pytest.mark.parametrize("stage", STAGES)
def test_a_stage_is_called_by_name(stage: str) -> None:
    """Every call of a stage names each argument: none is passed by its place."""
    text = re.sub(r"--[^\n]*", "", (SQL / "search.sql").read_text(encoding="utf-8"))
    calls = [m for m in re.finditer(rf"(?<!FUNCTION )\b{stage}\(", text)
             if not text[: m.start()].rstrip().endswith(("EXISTS", "ON FUNCTION"))]  # fmt: skip
    assert calls, f"{stage} is called nowhere"
    for call in calls:
        unnamed = [a.strip() for a in top_level_parts(balanced(text, call.end() - 1)) if "=>" not in a]
        assert unnamed == [], f"{stage} called with {unnamed} by place"


def test_the_type_and_the_class_have_the_same_fields(database: Database) -> None:
    with database.connection() as conn:
        names = conn.execute(
            "SELECT array_agg(a.attname ORDER BY a.attnum) FROM pg_attribute a"
            " WHERE a.attrelid = 'memory_filter'::regclass AND a.attnum > 0"
        ).fetchone()
    assert names is not None and tuple(names[0]) == MemoryFilter.field_names()


def test_a_filter_reaches_sql_whole(database: Database, clock: Clock) -> None:
    """Quotes, commas, parentheses and backslashes in a field stay in that field: no text of one
    field becomes another (the composite's text form is psycopg's, not ours)."""
    hostile = "a\"),(b\\\", 'x', {c}"
    sent = MemoryFilter(
        memory_types=["episodic", hostile],
        session_id=hostile,
        since=clock.now,
        min_importance=0.25,
        session_prefix="lg.",
        where_path="$.kind == $k",
        where_vars={"k": hostile},
    )
    with database.connection() as conn:
        row = conn.execute(
            "SELECT (f).memory_types, (f).session_id, (f).since, (f).until, (f).min_importance,"
            " (f).modality, (f).session_prefix, (f).where_path::text, (f).where_vars FROM (SELECT %s AS f) x",
            (sent,),
        ).fetchone()
    assert row == (
        ["episodic", hostile],
        hostile,
        clock.now,
        None,
        0.25,
        None,
        "lg.",
        '($."kind" == $"k")',
        {"k": hostile},
    )


def test_a_malformed_metadata_predicate_is_refused(database: Database) -> None:
    with database.connection() as conn, pytest.raises(psycopg.errors.SyntaxError):
        conn.execute("SELECT (%s::memory_filter).where_path", (MemoryFilter(where_path="$.a ==== 1"),))


@pytest.fixture()
def stored(make_manager: Callable[..., MemoryManager], clock: Clock) -> MemoryManager:
    """Twelve memories about a garden (at START, a day apart): two sessions under one prefix and
    another session, importances 0.1 to 0.9, an odd or even kind in the metadata."""
    manager = make_manager("filtered")
    manager.add_memories(
        [f"watering the garden roses, note {i}" for i in range(12)],
        "episodic",
        importance=[0.1 + 0.8 * i / 11 for i in range(12)],
        metadata=[{"kind": "odd" if i % 2 else "even"} for i in range(12)],
        timestamps=[START + timedelta(days=i) for i in range(12)],
        session_ids=[f"lg.garden.{i % 2}" if i < 8 else "other" for i in range(12)],
    )
    return manager


START = datetime(2026, 1, 1, tzinfo=UTC)
FILTERS = {
    "session": MemoryFilter(session_id="lg.garden.1"),
    "prefix": MemoryFilter(session_prefix="lg.garden"),
    "importance": MemoryFilter(min_importance=0.5),
    "metadata": MemoryFilter(where_path="$.kind == $k", where_vars={"k": "odd"}),
    "time": MemoryFilter(since=START + timedelta(days=3), until=START + timedelta(days=9)),
    "combined": MemoryFilter(memory_types=["episodic"], session_prefix="lg.", where_path='$.kind == "even"'),
}


@pytest.mark.parametrize("name", sorted(FILTERS))
@pytest.mark.parametrize("mode", ["hybrid", "lexical", "vector"])
def test_every_search_keeps_what_the_filter_says(stored: MemoryManager, name: str, mode: str) -> None:
    """search_memories in each mode, the as-of search and the vector candidates return exactly the
    memories the filter keeps, by the predicate read in Python."""
    kept = FILTERS[name]
    params = {
        "user": stored.user_id,
        "model": stored.embedder.model_name,
        "q": stored.embedder.encode_query("watering the garden roses"),
        "filter": kept,
        "mode": mode,
    }
    with stored.db.transaction(stored.user_id) as conn:
        rows = conn.execute(
            "SELECT id, session_id, importance, metadata, created_at FROM memories WHERE user_id = %(user)s",
            params,
        ).fetchall()
        expected = {r[0] for r in rows if passes(kept, *r[1:])}
        searched = conn.execute(
            "SELECT id FROM search_memories(%(user)s, %(model)s, %(q)s, 'watering garden roses', 50,"
            " p_filter => %(filter)s, p_mode => %(mode)s)",
            params,
        ).fetchall()
        as_of = conn.execute(
            "SELECT id FROM search_memories_as_of(%(user)s, %(model)s, %(q)s, 'garden roses', 50, %(filter)s,"
            " now(), now())",
            params,
        ).fetchall()
        nearest = conn.execute(
            "SELECT id FROM memory_candidates(%(user)s, %(model)s, %(q)s, 50, %(filter)s)", params
        ).fetchall()
    assert 0 < len(expected) < 12
    assert {r[0] for r in searched} == {r[0] for r in as_of} == {r[0] for r in nearest} == expected


def passes(
    kept: MemoryFilter, session: str, importance: float, metadata: dict[str, str], at: datetime
) -> bool:
    """Whether a memory meets one of FILTERS, read in Python."""
    kind = (kept.where_vars or {}).get("k") or (
        "even" if kept.where_path and "even" in kept.where_path else None
    )
    return (
        (kept.session_id is None or session == kept.session_id)
        and (kept.session_prefix is None or session.startswith(kept.session_prefix))
        and (kept.min_importance is None or importance >= kept.min_importance)
        and (kind is None or metadata.get("kind") == kind)
        and (kept.since is None or at >= kept.since)
        and (kept.until is None or at <= kept.until)
    )
