"""Time named in a query ("last week", "in May 2023", "昨天", "去年五月") as a time range.

Chinese dates, "the past N weeks" and a lone numeric date ("on 9/6") are read by the rules below
(dateparser misreads 年/月 forms, and takes milliseconds a question); other expressions by
``dateparser`` (English and Chinese), relative to ``now``, and widened to the period they name:
a day, a week (Monday to Monday), a month or a year. A query without a time expression gives None
and costs nothing: dateparser (a fifth of a second to load) is imported only when the query can
hold a date the rules do not read ("weekend" and 周末 name no period: they do not count).
"""

from __future__ import annotations

import logging
import re
from datetime import datetime, timedelta

log = logging.getLogger(__name__)

TimeRange = tuple[datetime, datetime]

_DIGITS = {
    "零": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "十": 10,
}
_NUMBER = r"\d{1,2}|[一二两三四五六七八九十]{1,3}"
_CHINESE_DATE = re.compile(
    rf"(?P<year>今年|去年|前年|明年|\d{{4}}年)?(?P<month>{_NUMBER})月(?:份)?(?:(?P<day>{_NUMBER})[日号])?"
)
_CHINESE_RELATIVE = {
    "今天": ("day", 0),
    "昨天": ("day", -1),
    "前天": ("day", -2),
    "本周": ("week", 0),
    "这周": ("week", 0),
    "上周": ("week", -1),
    "上个星期": ("week", -1),
    "本月": ("month", 0),
    "这个月": ("month", 0),
    "上个月": ("month", -1),
    "今年": ("year", 0),
    "去年": ("year", -1),
    "前年": ("year", -2),
}
# "5 people", "her 18th birthday": a number or an ordinal alone is no date
_BARE_NUMBER = re.compile(r"^\W*(?:in|on|at|of|the)?\W*\d{1,3}(?:st|nd|rd|th)?\W*$", re.IGNORECASE)
_TIME_WORDS = re.compile(
    r"\d|yesterday|today|tomorrow|\blast\b|\bago\b|\bweek(?!end)|\bmonth|\byear|monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday|january|february|march|april|\bmay\b|june|july|august|september|"
    r"october|november|december|[年月日号天]|周(?!末)",
    re.IGNORECASE,
)


_MONTH = (
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec"
)
_WEEKDAY = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_UNIT = r"days?|weeks?|months?|years?"
_COUNT = r"\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|few|several"
# What dateparser found counts only when it is a date a person names: a month, a year, a numeric
# date, yesterday or today, a period before now ("last week", "3 days ago", "this month"), or a
# weekday with last, this, next or on. Not a duration ("three months of"), a frequency ("days a
# week"), a weekday in a name ("Ash Wednesday", "the Sunday mass"), a year inside a word
# ("pre-1920") or a word that dateparser takes for a weekday ("we").
_REAL_DATE = re.compile(
    rf"\b(?:{_MONTH})\b|^\W*(?:in|of|since|during|by)?\s*(?:19|20)\d{{2}}\W*$|\d{{4}}-\d{{1,2}}-\d{{1,2}}|"
    rf"\b\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?\b|\byesterday\b|\btoday\b|\bago\b|"
    rf"\b(?:last|this|past)\s+(?:(?:{_COUNT})\s+)?(?:{_UNIT})\b|\b(?:last|this|next|on)\s+(?:{_WEEKDAY})\b",
    re.IGNORECASE,
)
# A query dateparser could find a date in that real_date keeps: _REAL_DATE without its anchors and
# word boundaries, so that it matches wherever _REAL_DATE matches a part of the query (dateparser
# takes a fifth of a second to load and milliseconds a question; most queries never need it).
_MAY_HOLD_DATE = re.compile(
    _REAL_DATE.pattern.replace(r"\b", "").replace("^", "").replace("$", ""), re.IGNORECASE
)
# "on 9/6", "9/6/2023": month/day (dateparser's order for English), alone in the query
_NUMERIC_DATE = re.compile(r"(?<![\d/])(?P<month>\d{1,2})/(?P<day>\d{1,2})(?:/(?P<year>\d{4}))?(?![\d/])")
_PAST = re.compile(rf"\b(?:past|last)\s+(?P<count>{_COUNT})\s+(?P<unit>{_UNIT})\b", re.IGNORECASE)
_COUNTS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a few": 3,
    "few": 3,
    "several": 3,
}


def real_date(text: str, query: str) -> bool:
    """Whether ``text``, a date dateparser found in ``query``, is one a person names there."""
    if not _REAL_DATE.search(text):
        return False
    year = re.fullmatch(r"\W*(?:in|of|since|during|by)?\s*((?:19|20)\d{2})\W*", text, re.IGNORECASE)
    # a year alone must stand alone in the query too: not pre-1920, $2000 or 2000-piece
    return not (year and re.search(rf"[-$\w]{year.group(1)}|{year.group(1)}[-\w]", query))


def past_period(query: str, now: datetime) -> TimeRange | None:
    """ "The past two months", "the last 3 weeks": from that long before now, to now."""
    match = _PAST.search(query)
    if match is None:
        return None
    count = match.group("count").lower()
    steps = int(count) if count.isdigit() else _COUNTS.get(count, 1)
    if steps < 2 and not match.group("count").isdigit():
        return None  # "last week" names the calendar week: the period rules read it
    unit = match.group("unit").lower().rstrip("s")
    days = {"day": 1, "week": 7, "month": 30.44, "year": 365.25}[unit] * steps
    start = (now - timedelta(days=days)).replace(hour=0, minute=0, second=0, microsecond=0)
    return start, now


def numeric_date(query: str, now: datetime) -> TimeRange | None:
    """The day of a numeric date that is the query's only date ("On 9/6 Bob bought a drone"), read
    as dateparser reads it (month first; without a year the last such day up to today), without
    starting dateparser: milliseconds a question, and the slowest searches were those."""
    found = list(_NUMERIC_DATE.finditer(query))
    if len(found) != 1:
        return None
    match = found[0]
    if _MAY_HOLD_DATE.search(query[: match.start()] + " " + query[match.end() :]):
        return None  # another date expression as well: dateparser reads them together
    year = int(match.group("year")) if match.group("year") else now.year
    try:
        start = now.replace(year=year, month=int(match.group("month")), day=int(match.group("day")))
        if match.group("year") is None and start.date() > now.date():
            start = start.replace(year=year - 1)
    except ValueError:  # no such day: dateparser decides
        return None
    return period(start, "day")


def _chinese_number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if text.startswith("十"):
        return 10 + (_DIGITS[text[1]] if len(text) > 1 else 0)
    if len(text) == 3 and text[1] == "十":
        return _DIGITS[text[0]] * 10 + _DIGITS[text[2]]
    if len(text) == 2 and text[1] == "十":
        return _DIGITS[text[0]] * 10
    return _DIGITS[text[0]]


def period(start: datetime, unit: str) -> TimeRange:
    """The day, week (from Monday), month or year that contains ``start``."""
    day = start.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "day":
        return day, day + timedelta(days=1)
    if unit == "week":
        monday = day - timedelta(days=day.weekday())
        return monday, monday + timedelta(days=7)
    if unit == "month":
        first = day.replace(day=1)
        return first, (first + timedelta(days=32)).replace(day=1)
    first = day.replace(month=1, day=1)
    return first, first.replace(year=first.year + 1)


def _shift(now: datetime, unit: str, steps: int) -> datetime:
    if unit == "day":
        return now + timedelta(days=steps)
    if unit == "week":
        return now + timedelta(weeks=steps)
    if unit == "month":
        month = now.month - 1 + steps
        return now.replace(year=now.year + month // 12, month=month % 12 + 1, day=1)
    return now.replace(year=now.year + steps, month=1, day=1)


def chinese_range(query: str, now: datetime) -> TimeRange | None:
    """A Chinese date (2023年5月, 去年五月, 三月十六号) or relative day, week, month or year."""
    match = _CHINESE_DATE.search(query)
    if match is not None:
        year_text = match.group("year")
        years = {"今年": now.year, "去年": now.year - 1, "前年": now.year - 2, "明年": now.year + 1}
        year = years.get(
            year_text or "", int(year_text[:4]) if year_text and year_text[0].isdigit() else now.year
        )
        month = _chinese_number(match.group("month"))
        if not 1 <= month <= 12:
            return None
        day = _chinese_number(match.group("day")) if match.group("day") else 1
        if year_text is None and (month, day) > (now.month, now.day):
            year -= 1  # a month named alone is the last one that has begun
        try:
            start = now.replace(year=year, month=month, day=day)
        except ValueError:
            return None
        return period(start, "day" if match.group("day") else "month")
    for word, (unit, steps) in _CHINESE_RELATIVE.items():
        if word in query:
            return period(_shift(now, unit, steps), unit)
    return None


def time_range(query: str, now: datetime) -> TimeRange | None:
    """The time range a query names, or None (see the module docstring)."""
    if not _TIME_WORDS.search(query):
        return None
    found = chinese_range(query, now)
    if found is not None:
        return found
    found = past_period(query, now) or numeric_date(query, now)
    if found is not None or not _MAY_HOLD_DATE.search(query):
        return found
    try:  # imported on first use: a fifth of a second
        from dateparser.date import DateDataParser
        from dateparser.search import search_dates
    except ImportError:  # the dependency is declared; an installation without it reads no dates
        log.info("dateparser is not installed: time expressions in queries are not read")
        return None
    base = now.replace(tzinfo=None)
    options = {"RELATIVE_BASE": base, "PREFER_DATES_FROM": "past"}
    hits = search_dates(query, languages=["en", "zh"], settings=options)
    hits = [
        (text, moment)
        for text, moment in hits or []
        if not _BARE_NUMBER.match(text) and real_date(text, query)
    ]
    if not hits:
        return None
    parser = DateDataParser(languages=["en", "zh"], settings=options)
    periods = [period(moment, parser.get_date_data(text).period or "day") for text, moment in hits]
    start, end = min(p[0] for p in periods), max(p[1] for p in periods)  # "in March and April"
    if end - start > 4 * max(p[1] - p[0] for p in periods):  # far apart: read the first alone
        start, end = periods[0]
    return start.replace(tzinfo=now.tzinfo), end.replace(tzinfo=now.tzinfo)
