"""Entities and relations from memory text, in Chinese and English.

- With a chat model configured: a JSON-mode extraction validated with pydantic; malformed
  output is rejected and the rule-based extractor runs instead (logged once per failure).
- Without one: spaCy. A trained pipeline (``zh_core_web_sm``, ``en_core_web_sm``) supplies named
  entities when installed; otherwise a blank pipeline whose Chinese tokens and part-of-speech tags
  come from jieba. Rules on top add technologies, roles, concepts and relations. What the rules
  find and miss is listed in docs/extraction.md.
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, Field, field_validator, model_validator

from hello_pgmem.errors import LLMError
from hello_pgmem.graph import lexicon as lx
from hello_pgmem.graph.normalize import normalize_name
from hello_pgmem.llm import ChatClient
from hello_pgmem.text import CJK_CLASS

log = logging.getLogger(__name__)

_ENTITY_TYPE = re.compile(r"^[A-Z][A-Z_]{0,39}$")
_ENGLISH_TERM = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[.+#-][A-Za-z0-9]+)*[+#]*")
_CJK = re.compile(f"[{CJK_CLASS}]")
MAX_ENTITIES = 50
MAX_RELATIONS = 100


class ExtractedEntity(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    type: str = "MISC"

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        value = value.strip()
        if not value or not normalize_name(value):
            raise ValueError("entity name must not be blank")
        return value

    @field_validator("type")
    @classmethod
    def _type(cls, value: str) -> str:
        value = value.strip().upper().replace(" ", "_").replace("-", "_")
        return value if _ENTITY_TYPE.match(value) else "MISC"


class ExtractedRelation(BaseModel):
    source: str = Field(min_length=1, max_length=200)
    type: str = Field(min_length=1, max_length=60)
    target: str = Field(min_length=1, max_length=200)

    @field_validator("type")
    @classmethod
    def _type(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("relation type must not be blank")
        return value


class Extraction(BaseModel):
    """Entities and relations of one text. Relation endpoints are always among the entities."""

    entities: list[ExtractedEntity] = Field(default_factory=list, max_length=MAX_ENTITIES)
    relations: list[ExtractedRelation] = Field(default_factory=list, max_length=MAX_RELATIONS)

    @model_validator(mode="after")
    def _consistent(self) -> Extraction:
        merged: dict[str, ExtractedEntity] = {}
        for entity in self.entities:
            key = normalize_name(entity.name)
            known = merged.get(key)
            if known is None or (known.type == "MISC" and entity.type != "MISC"):
                merged[key] = entity
        relations: dict[tuple[str, str, str], ExtractedRelation] = {}
        for relation in self.relations:
            source, target = normalize_name(relation.source), normalize_name(relation.target)
            if source == target:
                continue
            for name, key in ((relation.source, source), (relation.target, target)):
                merged.setdefault(key, ExtractedEntity(name=name))
            relations.setdefault((source, relation.type, target), relation)
        self.entities = list(merged.values())[:MAX_ENTITIES]
        self.relations = list(relations.values())[:MAX_RELATIONS]
        return self


class Extractor(Protocol):
    def extract(self, text: str) -> Extraction: ...


# --------------------------------------------------------------------------- rules


@dataclass
class _Token:
    text: str
    tag: str
    start: int
    entity: str | None = None  # entity type once recognised


@functools.cache
def _jieba() -> Any:
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    return jieba.posseg


@functools.cache
def _spacy(lang: str) -> Any:
    """A trained pipeline when installed, else a blank one (Chinese: jieba segmentation)."""
    import spacy

    trained = {"zh": "zh_core_web_sm", "en": "en_core_web_sm"}[lang]
    try:
        return spacy.load(trained)
    except OSError:
        return spacy.blank(lang)


def _is_trained(nlp: Any) -> bool:
    return "ner" in nlp.pipe_names


_SPACY_LABELS = {
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


def _tech_type(word: str) -> str | None:
    lowered = word.lower()
    if lowered in lx.TECHNOLOGIES or word in lx.TECH_PHRASES_ZH:
        return "TECHNOLOGY"
    return None


class RuleExtractor:
    """spaCy plus rules; deterministic and offline."""

    def extract(self, text: str) -> Extraction:
        if _CJK.search(text):
            entities, relations = self._chinese(text)
        else:
            entities, relations = self._english(text)
        return Extraction(
            entities=[ExtractedEntity(name=n, type=t) for n, t in entities],
            relations=[ExtractedRelation(source=s, type=r, target=o) for s, r, o in relations],
        )

    # ------------------------------------------------------------------ Chinese

    def _zh_tokens(self, text: str) -> list[_Token]:
        """English terms whole; Chinese runs through jieba's part-of-speech tagger."""
        tokens: list[_Token] = []
        position = 0
        for match in _ENGLISH_TERM.finditer(text):
            tokens += self._zh_segment(text[position : match.start()], position)
            tokens.append(_Token(match.group(), "eng", match.start()))
            position = match.end()
        tokens += self._zh_segment(text[position:], position)
        nlp = _spacy("zh")
        if _is_trained(nlp):  # a trained pipeline's entities win over jieba's tags
            for ent in nlp(text).ents:
                label = _SPACY_LABELS.get(ent.label_)
                for token in tokens:
                    if label and token.start == ent.start_char and token.text == ent.text:
                        token.entity = label
        return tokens

    @staticmethod
    def _zh_segment(chunk: str, offset: int) -> list[_Token]:
        tokens = []
        position = offset
        for pair in _jieba().cut(chunk):
            word, flag = pair.word, pair.flag
            if word.strip():
                tokens.append(_Token(word, flag, position))
            position += len(word)
        return tokens

    @staticmethod
    def _merge_phrases(tokens: list[_Token]) -> list[_Token]:
        """Join tokens that jieba split inside a known phrase (机器 + 学习 → 机器学习)."""
        merged: list[_Token] = []
        for token in tokens:
            if merged and (merged[-1].text + token.text) in lx.TECH_PHRASES_ZH:
                merged[-1] = _Token(merged[-1].text + token.text, "n", merged[-1].start, merged[-1].entity)
            else:
                merged.append(token)
        return merged

    @staticmethod
    def _zh_entity(token: _Token) -> str | None:
        word, tag = token.text, token.tag
        if token.entity:
            return token.entity
        if tag == "eng":
            return _tech_type(word) or ("ORG" if word.lower() in lx.KNOWN_ORGS else None)
        if _tech_type(word):
            return "TECHNOLOGY"
        if word.lower() in lx.KNOWN_ORGS or tag == "nt" or (len(word) > 2 and word.endswith(lx.ORG_SUFFIXES)):
            return "ORG"
        if tag == "nrt" and 2 <= len(word) <= 6:
            return "PERSON"
        if tag in ("nr", "nrfg") and 2 <= len(word) <= 4 and word[0] in lx.SURNAMES:
            return "PERSON"
        if tag == "ns" and len(word) >= 2:
            return "LOCATION"
        return None

    def _chinese(self, text: str) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
        tokens = self._merge_phrases(self._zh_tokens(text))
        for token in tokens:
            token.entity = self._zh_entity(token)
        entities: list[tuple[str, str]] = [(t.text, t.entity) for t in tokens if t.entity]
        relations: list[tuple[str, str, str]] = []
        subject: str | None = None
        clause: list[_Token] = []
        for token in [*tokens, _Token("。", "x", len(text))]:
            if token.text in lx.ZH_CLAUSE_BREAKS:
                subject = self._zh_clause(text, clause, subject, entities, relations)
                clause = []
                if token.text in lx.ZH_SENTENCE_BREAKS:
                    subject = None
            else:
                clause.append(token)
        return entities, relations

    def _zh_clause(
        self,
        text: str,
        clause: list[_Token],
        subject: str | None,
        entities: list[tuple[str, str]],
        relations: list[tuple[str, str, str]],
    ) -> str | None:
        """Apply the relation rules to one clause; return the subject carried to the next."""
        for token in clause:  # a person named before the clause's first verb is its subject
            if token.entity == "PERSON":
                subject = token.text
                break
            if token.tag.startswith("v") or token.text in lx.ZH_COPULA or token.text in lx.ZH_OBJECT_VERBS:
                break
        for i, token in enumerate(clause):
            word = token.text
            rest = clause[i + 1 :]
            if word in lx.ZH_COPULA:
                role = self._zh_role(text, rest)
                if role:
                    entities.append((role[0], "ROLE"))
                    if subject:
                        relations.append((subject, "职业", role[0]))
                        relations += [(subject, "技能", tech) for tech in role[1]]
                        entities += [(tech, "TECHNOLOGY") for tech in role[1]]
            elif word in lx.ZH_OBJECT_VERBS:
                if word == "专注" and rest and rest[0].text == "于":
                    rest = rest[1:]
                for name, kind in self._zh_objects(rest):
                    entities.append((name, kind))
                    if subject:
                        relations.append((subject, lx.ZH_OBJECT_VERBS[word], name))
                break  # the objects run to the end of the clause
            elif word in lx.ZH_LIVE_VERBS or word in lx.ZH_FROM_VERBS or word == "在":
                places = [t for t in rest if t.entity in ("LOCATION", "ORG")]
                if not places or not subject:
                    continue
                if word in lx.ZH_FROM_VERBS:
                    relations.append((subject, "来自", places[0].text))
                elif word in lx.ZH_LIVE_VERBS:
                    relations.append((subject, "居住于", places[0].text))
                elif any(t.text in lx.ZH_WORK_VERBS for t in rest):
                    employer = next((t for t in reversed(places) if t.entity == "ORG"), places[0])
                    relations.append((subject, "工作于", employer.text))
                break
        return subject

    @staticmethod
    def _zh_role(text: str, rest: list[_Token]) -> tuple[str, list[str]] | None:
        """``一名Python开发者`` after a copula: the role phrase and the technologies inside it."""
        words = [t for t in rest if t.text not in lx.ZH_QUANTIFIERS]
        phrase: list[_Token] = []
        for token in words[:4]:
            phrase.append(token)
            if token.text.endswith(lx.ROLE_SUFFIXES) or "".join(t.text for t in phrase).endswith(
                lx.ROLE_SUFFIXES
            ):
                start, end = phrase[0].start, token.start + len(token.text)
                name = text[start:end].strip()
                techs = [t.text for t in phrase if _tech_type(t.text) == "TECHNOLOGY"]
                return name, techs
            if token.tag.startswith(("v", "p", "u", "c")) and token.tag != "vn":
                return None
        return None

    @staticmethod
    def _zh_objects(rest: list[_Token]) -> list[tuple[str, str]]:
        """The objects of a verb: split on conjunctions; technologies alone, else a concept phrase."""
        groups: list[list[_Token]] = [[]]
        for token in rest:
            if token.text in lx.ZH_CONJUNCTIONS:
                groups.append([])
            else:
                groups[-1].append(token)
        found: list[tuple[str, str]] = []
        for group in groups:
            techs = [t.text for t in group if _tech_type(t.text) == "TECHNOLOGY" or t.tag == "eng"]
            if techs:
                found += [(t, _tech_type(t) or "MISC") for t in techs]
                continue
            named = [t for t in group if t.entity in ("PERSON", "ORG", "LOCATION")]
            if named:
                found += [(t.text, t.entity or "MISC") for t in named]
                continue
            words = [t for t in group if not t.tag.startswith(("u", "p", "r", "d", "m", "q"))]
            phrase = "".join(t.text for t in words)
            if 2 <= len(phrase) <= 20:
                found.append((phrase, _tech_type(phrase) or "CONCEPT"))
        return found

    # ------------------------------------------------------------------ English

    def _english(self, text: str) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
        nlp = _spacy("en")
        doc = nlp(text)
        entities: list[tuple[str, str]] = []
        kinds: dict[str, str] = {}
        if _is_trained(nlp):
            for ent in doc.ents:
                label = _SPACY_LABELS.get(ent.label_)
                if label:
                    kinds[ent.text] = label
        names = self._en_names(doc)
        for name in names:
            default = "ORG" if name.lower() in lx.KNOWN_ORGS else "MISC"
            kinds.setdefault(name, _tech_type(name) or default)
        for token in doc:
            if _tech_type(token.text):
                kinds[token.text] = "TECHNOLOGY"
        relations: list[tuple[str, str, str]] = []
        subject: str | None = None
        words = [t.text for t in doc]
        lowered = [w.lower() for w in words]
        for i, word in enumerate(lowered):
            here = self._en_name_at(names, words, i)
            if here and kinds.get(here) in ("MISC", "PERSON") and self._en_is_subject(lowered, i, here):
                subject = here
                kinds[here] = "PERSON"
            if word in lx.EN_PRONOUNS and subject is None:
                continue
            if not subject:
                continue
            if word in ("is", "was") and i + 1 < len(lowered) and lowered[i + 1] in ("a", "an"):
                role = []
                for j in range(i + 2, min(i + 6, len(words))):
                    if lowered[j] in lx.EN_ROLE_STOP or not words[j].isalnum():
                        break
                    role.append(words[j])
                if role:
                    role_name = " ".join(role)
                    kinds[role_name] = "ROLE"
                    relations.append((subject, "is_a", role_name))
                    for part in role:
                        if _tech_type(part):
                            relations.append((subject, "skill", part))
            elif (
                word in ("works", "worked", "work")
                and i + 2 < len(lowered)
                and lowered[i + 1] in ("at", "for")
            ):
                org = self._en_name_at(names, words, i + 2)
                if org:
                    kinds[org] = "ORG"
                    relations.append((subject, "works_at", org))
            elif word in ("lives", "lived", "live") and i + 2 < len(lowered) and lowered[i + 1] == "in":
                place = self._en_name_at(names, words, i + 2)
                if place:
                    kinds[place] = "LOCATION"
                    relations.append((subject, "lives_in", place))
            elif word in lx.EN_OBJECT_VERBS:
                for j in range(i + 1, min(i + 8, len(words))):
                    if words[j] in (".", ";", "!", "?"):
                        break
                    target = self._en_name_at(names, words, j) or (words[j] if _tech_type(words[j]) else None)
                    if target:
                        relations.append((subject, lx.EN_OBJECT_VERBS[word], target))
                        kinds.setdefault(target, _tech_type(target) or "MISC")
        entities = [(name, kind) for name, kind in kinds.items()]
        return entities, relations

    @staticmethod
    def _en_names(doc: Any) -> list[str]:
        """Runs of capitalised words (not pronouns or sentence-initial function words)."""
        names: list[str] = []
        run: list[str] = []
        for token in [*doc, None]:
            text = token.text if token is not None else ""
            capital = token is not None and (token.is_title or (token.is_upper and len(text) > 1))
            if capital and text.lower() not in lx.EN_PRONOUNS and text.lower() not in lx.EN_STOP_TITLE:
                run.append(text)
            else:
                if run:
                    names.append(" ".join(run))
                run = []
        return names

    @staticmethod
    def _en_name_at(names: list[str], words: list[str], i: int) -> str | None:
        for name in names:
            parts = name.split(" ")
            if words[i : i + len(parts)] == parts:
                return name
        return None

    @staticmethod
    def _en_is_subject(lowered: list[str], i: int, name: str) -> bool:
        after = i + len(name.split(" "))
        return after < len(lowered) and lowered[after] in (
            "is",
            "was",
            "works",
            "worked",
            "lives",
            "lived",
            *lx.EN_OBJECT_VERBS,
        )


# --------------------------------------------------------------------------- LLM

EXTRACTION_PROMPT = """从用户提供的文本中抽取知识图谱的实体和关系，只输出一个 JSON 对象：
{"entities": [{"name": "实体名",
               "type": "PERSON|ORG|LOCATION|TECHNOLOGY|ROLE|CONCEPT|EVENT|MISC"}],
 "relations": [{"source": "实体名", "type": "关系（简短动词或名词，如 职业、擅长、工作于）",
                "target": "实体名"}]}
规则：实体名取原文中的写法；关系的两端必须是抽取出的实体；没有就返回空列表；不要解释。"""


class LLMExtractor:
    """Extraction by a chat model in JSON mode, falling back to ``fallback`` on any failure."""

    def __init__(self, client: ChatClient, fallback: Extractor | None = None) -> None:
        self.client = client
        self.fallback = fallback or RuleExtractor()

    def extract(self, text: str) -> Extraction:
        messages = [{"role": "system", "content": EXTRACTION_PROMPT}, {"role": "user", "content": text}]
        try:
            return self.client.complete_json(messages, Extraction)
        except LLMError as exc:
            log.warning("LLM extraction failed, using the rule-based extractor: %s", exc)
            return self.fallback.extract(text)


def create_extractor(client: ChatClient | None) -> Extractor:
    """The LLM extractor when a chat model is configured, else the rule-based one."""
    return LLMExtractor(client) if client is not None else RuleExtractor()
