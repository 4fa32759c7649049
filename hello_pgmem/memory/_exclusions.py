"""What a question sets aside ("besides pottery", "other than fixing cars", "除了打篮球"): those
phrases are taken out of the question the search ranks by (its terms, the names it gives and its
vector), so the memories about the excluded topic do not fill the top of the ranking.
"""

from __future__ import annotations

import re

_ENGLISH = re.compile(
    r"\b(?:other than|besides|except(?: for)?|apart from|aside from)\s+[^?,.;!]+", re.IGNORECASE
)
_CHINESE = re.compile(r"除了[^，,。？?；;！!]+?(?:以外|之外|外)?(?=[，,。？?；;！!]|还|也|$)")


def without_exclusions(query: str) -> str:
    """``query`` without the phrases it excludes; the query itself when nothing else is left."""
    kept = _CHINESE.sub(" ", _ENGLISH.sub(" ", query)).strip()
    return kept if re.search(r"\w", kept) else query
