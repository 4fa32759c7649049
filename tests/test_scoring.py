"""Every SQL scoring function against hand-computed values, edges included."""

from __future__ import annotations

import math

import psycopg
import pytest

Conn = psycopg.Connection[tuple[object, ...]]


def value(conn: Conn, expression: str, *args: object) -> float:
    row = conn.execute(f"SELECT {expression}", args).fetchone()
    assert row is not None
    return float(row[0])  # type: ignore[arg-type]


@pytest.mark.parametrize(("importance", "expected"), [(0.0, 0.8), (0.5, 1.0), (1.0, 1.2), (0.25, 0.9)])
def test_importance_weight(conn: Conn, importance: float, expected: float) -> None:
    assert value(conn, "importance_weight(%s)", importance) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("hours", "factor", "expected"),
    [
        (0.0, 0.95, 1.0),
        (6.0, 0.95, 0.95),
        (12.0, 0.95, 0.9025),
        (3.0, 0.95, 0.95**0.5),
        (1000.0, 0.95, 0.1),  # 0.95^166.7 is far below the 0.1 floor
        (6.0, 0.5, 0.5),
    ],
)
def test_working_time_decay(conn: Conn, hours: float, factor: float, expected: float) -> None:
    assert value(conn, "working_time_decay(%s, %s)", hours, factor) == pytest.approx(expected)


def test_working_time_decay_default_factor_is_0_95(conn: Conn) -> None:
    assert value(conn, "working_time_decay(%s)", 6.0) == pytest.approx(0.95)


@pytest.mark.parametrize(("age_days", "expected"), [(0.0, 1.0), (1.0, 0.5), (3.0, 0.25), (99999.0, 1e-5)])
def test_episodic_recency(conn: Conn, age_days: float, expected: float) -> None:
    assert value(conn, "episodic_recency(%s)", age_days) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("age_hours", "expected"),
    [(0.0, 1.0), (24.0, math.exp(-0.1)), (240.0, math.exp(-1.0)), (24.0 * 365, 0.1)],
)
def test_perceptual_recency(conn: Conn, age_hours: float, expected: float) -> None:
    assert value(conn, "perceptual_recency(%s)", age_hours) == pytest.approx(expected)


def test_episodic_score(conn: Conn) -> None:
    # (0.9 * 0.8 + 0.5 * 0.2) * (0.8 + 0.7 * 0.4) = 0.82 * 1.08
    assert value(conn, "episodic_score(%s, %s, %s)", 0.9, 0.5, 0.7) == pytest.approx(0.8856)
    assert value(conn, "episodic_score(%s, %s, %s)", 1.0, 1.0, 1.0) == pytest.approx(1.2)
    assert value(conn, "episodic_score(%s, %s, %s)", 0.0, 0.0, 0.0) == pytest.approx(0.0)
    assert value(conn, "episodic_score(%s, %s, %s)", -0.5, 0.0, 0.5) == pytest.approx(-0.4)


def test_semantic_score(conn: Conn) -> None:
    # (0.8 * 0.7 + 0.5 * 0.3) * (0.8 + 0.2 * 0.4) = 0.71 * 0.88
    assert value(conn, "semantic_score(%s, %s, %s)", 0.8, 0.5, 0.2) == pytest.approx(0.6248)
    assert value(conn, "semantic_score(%s, %s, %s)", 0.0, 1.0, 1.0) == pytest.approx(0.36)


def test_working_score_combines_tfidf_and_keyword(conn: Conn) -> None:
    # (0.6 * 0.7 + 0.4 * 0.3) * 0.95 * (0.8 + 0.5 * 0.4) = 0.54 * 0.95
    assert value(conn, "working_score(%s, %s, %s, %s)", 0.6, 0.4, 0.95, 0.5) == pytest.approx(0.513)


def test_working_score_uses_keyword_alone_when_tfidf_is_zero(conn: Conn) -> None:
    # 0.4 * 1.0 * (0.8 + 1.0 * 0.4)
    assert value(conn, "working_score(%s, %s, %s, %s)", 0.0, 0.4, 1.0, 1.0) == pytest.approx(0.48)


def test_working_priority(conn: Conn) -> None:
    assert value(conn, "working_priority(%s, %s)", 0.5, 0.9) == pytest.approx(0.45)


@pytest.mark.parametrize(
    ("expression", "args", "message"),
    [
        ("importance_weight(%s)", (None,), "importance must be a number between 0 and 1, got NULL"),
        ("importance_weight(%s)", (1.5,), "importance must be a number between 0 and 1, got 1.5"),
        ("importance_weight(%s)", (-0.1,), "importance must be a number between 0 and 1"),
        ("importance_weight(%s)", (float("nan"),), "got NaN"),
        ("working_time_decay(%s)", (-1.0,), "hours must be a number between 0 and"),
        (
            "working_time_decay(%s, %s)",
            (1.0, None),
            "decay_factor must be a number between 0 and 1",
        ),
        ("episodic_recency(%s)", (None,), "age_days must be a number"),
        ("episodic_recency(%s)", (float("inf"),), "age_days must be a number"),
        ("perceptual_recency(%s)", (-5.0,), "age_hours must be a number"),
        (
            "episodic_score(%s, %s, %s)",
            (1.1, 0.5, 0.5),
            "vector_score must be a number between -1 and 1",
        ),
        ("episodic_score(%s, %s, %s)", (0.5, None, 0.5), "recency must be a number"),
        (
            "semantic_score(%s, %s, %s)",
            (0.5, 2.0, 0.5),
            "graph_score must be a number between 0 and 1",
        ),
        ("working_score(%s, %s, %s, %s)", (0.5, 0.5, 0.5, None), "importance must be a number"),
        ("working_score(%s, %s, %s, %s)", (None, 0.5, 0.5, 0.5), "tfidf must be a number"),
    ],
)
def test_bad_inputs_are_rejected_with_the_argument_named(
    conn: Conn, expression: str, args: tuple[object, ...], message: str
) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=message.replace("(", r"\(")):
        conn.execute(f"SELECT {expression}", args)
    conn.rollback()


def test_scoring_functions_are_immutable_and_commented(conn: Conn) -> None:
    rows = conn.execute(
        """SELECT p.proname, p.provolatile, obj_description(p.oid, 'pg_proc')
           FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
           AND p.proname IN ('importance_weight', 'working_time_decay', 'episodic_recency',
                             'perceptual_recency', 'episodic_score', 'semantic_score',
                             'working_score', 'working_priority')"""
    ).fetchall()
    assert len(rows) == 8
    for name, volatility, comment in rows:
        assert volatility == "i", name
        assert comment, f"{name} has no COMMENT"
