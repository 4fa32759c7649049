"""Entity-name normalisation: the same entity merges across a user's memories."""

from __future__ import annotations

import re
import unicodedata

from hello_pgmem.core.text import CJK_CLASS, WORD

_SPACES = re.compile(r"\s+")
_SPACE_NEAR_CJK = re.compile(f"\\s*([{CJK_CLASS}])\\s*")


def normalize_name(name: str) -> str:
    """NFKC (full-width to half-width), case-folded, spaces collapsed and removed next to CJK.

    ``"Ｐｙｔｈｏｎ 开发者"``, ``"python开发者"`` and ``" PYTHON  开发者"`` all give ``"python开发者"``.
    """
    text = unicodedata.normalize("NFKC", name).casefold()
    text = _SPACES.sub(" ", text).strip()
    return _SPACE_NEAR_CJK.sub(r"\1", text)


_WORD = WORD
_UNITS = re.compile(f"[{CJK_CLASS}]|{_WORD}(?:[.+#'-]{_WORD})*[+#]*", re.UNICODE)
MAX_QUERY_CHARS = 64
MAX_UNITS = 12


def name_candidates(text: str) -> list[str]:
    """Every normalised span of ``text`` that could be an entity name.

    Units are single CJK characters and whole Latin words; a candidate is a run of 1 to 12
    consecutive units (Latin words joined by a space, anything next to CJK without one), at least
    two characters long. Matching these against ``entities.name_norm`` finds the user's entities
    that a query mentions, through the unique index, without guessing word boundaries in Chinese.
    """
    normalized = normalize_name(text)[: MAX_QUERY_CHARS * 4]
    units = [(m.group(), m.start(), m.end()) for m in _UNITS.finditer(normalized)][:MAX_QUERY_CHARS]
    found: dict[str, None] = {}
    for i in range(len(units)):
        for j in range(i, min(i + MAX_UNITS, len(units))):
            # a span of normalised text from one unit to another is normalised already
            candidate = normalized[units[i][1] : units[j][2]]
            if len(candidate) >= 2:
                found[candidate] = None
    return list(found)
