"""Time named in a question, read relative to a given now (no database)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hello_pgmem.memory import time_range

NOW = datetime(2024, 3, 20, 15, 30, tzinfo=UTC)  # a Wednesday


def day(year: int, month: int, date: int) -> datetime:
    return datetime(year, month, date, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("What did Melanie paint in May 2023?", day(2023, 5, 1), day(2023, 6, 1)),
        ("What happened on October 13, 2023?", day(2023, 10, 13), day(2023, 10, 14)),
        ("How many times did she go to the beach in 2023?", day(2023, 1, 1), day(2024, 1, 1)),
        ("What did I do yesterday?", day(2024, 3, 19), day(2024, 3, 20)),
        ("Who did I meet last week?", day(2024, 3, 11), day(2024, 3, 18)),
        ("昨天吃了什么？", day(2024, 3, 19), day(2024, 3, 20)),
        ("去年五月去了哪里？", day(2023, 5, 1), day(2023, 6, 1)),
        ("2023年5月发生了什么", day(2023, 5, 1), day(2023, 6, 1)),
        ("三月十六号的会议", day(2024, 3, 16), day(2024, 3, 17)),
        ("十一月去了哪里", day(2023, 11, 1), day(2023, 12, 1)),  # the last November that has begun
        ("上周的会议说了什么", day(2024, 3, 11), day(2024, 3, 18)),
        ("Which airline did I fly with the most in January and February?", day(2024, 1, 1), day(2024, 3, 1)),
        ("What concerts did I attend in the past two months?", day(2024, 1, 19), NOW),
        ("What did I cook on Monday?", day(2024, 3, 18), day(2024, 3, 19)),
    ],
)
def test_a_named_time_becomes_the_period_it_names(question: str, start: datetime, end: datetime) -> None:
    assert time_range(question, NOW) == (start, end)


@pytest.mark.parametrize(
    "question",
    [
        "What is Caroline's favourite book?",
        "How long ago was Caroline's 18th birthday?",  # an ordinal alone is no date
        "Did 5 people come to the party?",
        "李四是前端工程师吗",
        "When did Caroline go to the support group?",  # "when" asks for a time, names none
        "David prefers jazz on weekends",  # a weekend is no period named
        "周末喜欢吃饺子",
        # none of these is a date (LongMemEval's questions): a year inside a word, a duration, a
        # frequency, weekdays in names, and "we", which dateparser reads as Wednesday
        "How many pre-1920 American coins do I have in my collection?",
        "How many autographed baseballs did I add in the first three months of collecting?",
        "How many days a week do I attend fitness classes?",
        "How many days passed between the Sunday mass at St. Mary's and the Ash Wednesday service?",
        "I think we discussed work from home jobs for seniors earlier.",
        "Did I use the $5 coupon on coffee creamer?",
    ],
)
def test_no_time_is_read_where_none_is_named(question: str) -> None:
    assert time_range(question, NOW) is None


def test_a_lone_numeric_date_is_read_without_dateparser(monkeypatch: pytest.MonkeyPatch) -> None:
    import dateparser.search

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("dateparser started")

    monkeypatch.setattr(dateparser.search, "search_dates", refuse)
    assert time_range("On 9/6 Bob bought a drone", NOW) == (day(2023, 9, 6), day(2023, 9, 7))
    assert time_range("what happened 3/20?", NOW) == (day(2024, 3, 20), day(2024, 3, 21)), "today"
    assert time_range("the invoice of 2/9/2022", NOW) == (day(2022, 2, 9), day(2022, 2, 10))
    for other in ("On 9/6 last year", "between 9/6 and 9/9", "on 13/6"):  # dateparser decides
        with pytest.raises(AssertionError, match="dateparser started"):
            time_range(other, NOW)


@pytest.mark.parametrize(
    "now", [NOW, datetime(2024, 2, 29, 8, tzinfo=UTC), datetime(2023, 12, 31, 23, tzinfo=UTC)]
)
def test_numeric_dates_are_read_as_dateparser_reads_them(
    monkeypatch: pytest.MonkeyPatch, now: datetime
) -> None:
    from hello_pgmem.memory import _when as when

    questions = [f"On {m}/{d} we met" for m in (1, 2, 3, 6, 12) for d in (1, 9, 20, 28, 29, 30, 31)]
    questions += ["was it 7/4/2021?", "Meeting on 11/16 at the office"]
    fast = [time_range(q, now) for q in questions]
    monkeypatch.setattr(when, "numeric_date", lambda query, at: None)
    assert fast == [time_range(q, now) for q in questions]
