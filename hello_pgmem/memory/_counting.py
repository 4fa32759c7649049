"""Questions that ask for a count ("How many fitness classes do I attend?", "我去过几个国家？"):
their evidence names instances of the category asked (Zumba, Nuuk), which the question's own
words rarely match, so a model of meaning weighs more in their ranking (docs/search.md).
"""

from __future__ import annotations

import re

_MEASURE_WORDS = "个次种本位家件项场部只条门所座首篇台辆节张双"
"""Chinese classifiers that count things after 多少 or 几 (多少钱, an amount, is not a count)."""
_COUNT = re.compile(rf"\bhow many\b|(?:多少|几)[{_MEASURE_WORDS}]", re.IGNORECASE)


def asks_for_a_count(query: str) -> bool:
    """Whether ``query`` asks how many things there are (English or Chinese)."""
    return _COUNT.search(query) is not None
