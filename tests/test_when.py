"""Time named in a question, read relative to a given now (no database)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hello_pgmem.memory.when import time_range

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
