"""The rule-based extractor: Chinese or English rules by the script of the text."""

from __future__ import annotations

import re

from hello_pgmem.core.text import CJK_CLASS
from hello_pgmem.graph.extracted import ExtractedEntity, ExtractedRelation, Extraction
from hello_pgmem.graph.rules_en import EnglishRules
from hello_pgmem.graph.rules_zh import ChineseRules

_CJK = re.compile(f"[{CJK_CLASS}]")


class RuleExtractor:
    """spaCy plus rules; deterministic and offline."""

    def extract(self, text: str) -> Extraction:
        rules = ChineseRules() if _CJK.search(text) else EnglishRules()
        entities, relations = rules.extract(text)
        return Extraction(
            entities=[ExtractedEntity(name=n, type=t) for n, t in entities],
            relations=[ExtractedRelation(source=s, type=r, target=o) for s, r, o in relations],
        )
