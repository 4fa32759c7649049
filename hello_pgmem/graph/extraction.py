"""Entities and relations from memory text, in Chinese and English.

- With a chat model configured: a JSON-mode extraction validated with pydantic
  (:mod:`~hello_pgmem.graph.llm_extractor`); malformed output is rejected and the rule-based
  extractor runs instead (logged once per failure).
- Without one: spaCy. A trained pipeline (``zh_core_web_sm``, ``en_core_web_sm``) supplies named
  entities when installed; otherwise a blank pipeline whose Chinese tokens and part-of-speech tags
  come from jieba. Rules on top (:mod:`~hello_pgmem.graph.rules_zh`,
  :mod:`~hello_pgmem.graph.rules_en`) add technologies, roles, concepts and relations. What the
  rules find and miss is listed in docs/extraction.md.
"""

from __future__ import annotations

from hello_pgmem.core.i18n import Language
from hello_pgmem.graph.extracted import ExtractedEntity, ExtractedRelation, Extraction, Extractor
from hello_pgmem.graph.llm_extractor import LLMExtractor
from hello_pgmem.graph.rules import RuleExtractor
from hello_pgmem.llm import ChatClient

__all__ = [
    "ExtractedEntity",
    "ExtractedRelation",
    "Extraction",
    "Extractor",
    "LLMExtractor",
    "RuleExtractor",
    "create_extractor",
]


def create_extractor(client: ChatClient | None, language: Language = "en") -> Extractor:
    """The LLM extractor (falling back to the rules) when a chat model is configured, else the
    rules; ``language`` is the wording of the model's instructions."""
    return LLMExtractor(client, language=language) if client is not None else RuleExtractor()
