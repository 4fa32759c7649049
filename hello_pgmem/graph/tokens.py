"""What the rule-based extractors share: tokens, the jieba and spaCy pipelines, technology terms."""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any

from hello_pgmem.graph import lexicon as lx


@dataclass
class Token:
    text: str
    tag: str
    start: int
    entity: str | None = None  # entity type once recognised


@functools.cache
def jieba_tagger() -> Any:
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    return jieba.posseg


@functools.cache
def spacy_pipeline(lang: str) -> Any:
    """A trained pipeline when installed, else a blank one (Chinese: jieba segmentation)."""
    import spacy

    trained = {"zh": "zh_core_web_sm", "en": "en_core_web_sm"}[lang]
    try:
        return spacy.load(trained)
    except OSError:
        return spacy.blank(lang)


def is_trained(nlp: Any) -> bool:
    return "ner" in nlp.pipe_names


SPACY_LABELS = {
    "PERSON": "PERSON",
    "PER": "PERSON",
    "ORG": "ORG",
    "GPE": "LOCATION",
    "LOC": "LOCATION",
    "FAC": "LOCATION",
    "NORP": "MISC",
    "PRODUCT": "MISC",
    "WORK_OF_ART": "MISC",
}


def tech_type(word: str) -> str | None:
    lowered = word.lower()
    if lowered in lx.TECHNOLOGIES or word in lx.TECH_PHRASES_ZH:
        return "TECHNOLOGY"
    return None
