"""Rules that find entities and relations in Chinese text (jieba part-of-speech tags, word lists).

What they find and miss is listed in docs/extraction.md.
"""

from __future__ import annotations

import re

from hello_pgmem.graph import lexicon as lx
from hello_pgmem.graph.tokens import SPACY_LABELS, Token, is_trained, jieba_tagger, spacy_pipeline, tech_type

_ENGLISH_TERM = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[.+#-][A-Za-z0-9]+)*[+#]*")

Entities = list[tuple[str, str]]
Relations = list[tuple[str, str, str]]


class ChineseRules:
    """Entities and relations of a Chinese text."""

    def extract(self, text: str) -> tuple[Entities, Relations]:
        return self._chinese(text)

    def _zh_tokens(self, text: str) -> list[Token]:
        """English terms whole; Chinese runs through jieba's part-of-speech tagger."""
        tokens: list[Token] = []
        position = 0
        for match in _ENGLISH_TERM.finditer(text):
            tokens += self._zh_segment(text[position : match.start()], position)
            tokens.append(Token(match.group(), "eng", match.start()))
            position = match.end()
        tokens += self._zh_segment(text[position:], position)
        nlp = spacy_pipeline("zh")
        if is_trained(nlp):  # a trained pipeline's entities win over jieba's tags
            for ent in nlp(text).ents:
                label = SPACY_LABELS.get(ent.label_)
                for token in tokens:
                    if label and token.start == ent.start_char and token.text == ent.text:
                        token.entity = label
        return tokens

    @staticmethod
    def _zh_segment(chunk: str, offset: int) -> list[Token]:
        tokens = []
        position = offset
        for pair in jieba_tagger().cut(chunk):
            word, flag = pair.word, pair.flag
            if word.strip():
                tokens.append(Token(word, flag, position))
            position += len(word)
        return tokens

    @staticmethod
    def _merge_phrases(tokens: list[Token]) -> list[Token]:
        """Join tokens that jieba split inside a known phrase (机器 + 学习 → 机器学习)."""
        merged: list[Token] = []
        for token in tokens:
            if merged and (merged[-1].text + token.text) in lx.TECH_PHRASES_ZH:
                merged[-1] = Token(merged[-1].text + token.text, "n", merged[-1].start, merged[-1].entity)
            else:
                merged.append(token)
        return merged

    @staticmethod
    def _zh_entity(token: Token) -> str | None:
        word, tag = token.text, token.tag
        if token.entity:
            return token.entity
        if tag == "eng":
            return tech_type(word) or ("ORG" if word.lower() in lx.KNOWN_ORGS else None)
        if tech_type(word):
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
        clause: list[Token] = []
        for token in [*tokens, Token("。", "x", len(text))]:
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
        clause: list[Token],
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
    def _zh_role(text: str, rest: list[Token]) -> tuple[str, list[str]] | None:
        """``一名Python开发者`` after a copula: the role phrase and the technologies inside it."""
        words = [t for t in rest if t.text not in lx.ZH_QUANTIFIERS]
        phrase: list[Token] = []
        for token in words[:4]:
            phrase.append(token)
            if token.text.endswith(lx.ROLE_SUFFIXES) or "".join(t.text for t in phrase).endswith(
                lx.ROLE_SUFFIXES
            ):
                start, end = phrase[0].start, token.start + len(token.text)
                name = text[start:end].strip()
                techs = [t.text for t in phrase if tech_type(t.text) == "TECHNOLOGY"]
                return name, techs
            if token.tag.startswith(("v", "p", "u", "c")) and token.tag != "vn":
                return None
        return None

    @staticmethod
    def _zh_objects(rest: list[Token]) -> list[tuple[str, str]]:
        """The objects of a verb: split on conjunctions; technologies alone, else a concept phrase."""
        groups: list[list[Token]] = [[]]
        for token in rest:
            if token.text in lx.ZH_CONJUNCTIONS:
                groups.append([])
            else:
                groups[-1].append(token)
        found: list[tuple[str, str]] = []
        for group in groups:
            techs = [t.text for t in group if tech_type(t.text) == "TECHNOLOGY" or t.tag == "eng"]
            if techs:
                found += [(t, tech_type(t) or "MISC") for t in techs]
                continue
            named = [t for t in group if t.entity in ("PERSON", "ORG", "LOCATION")]
            if named:
                found += [(t.text, t.entity or "MISC") for t in named]
                continue
            words = [t for t in group if not t.tag.startswith(("u", "p", "r", "d", "m", "q"))]
            phrase = "".join(t.text for t in words)
            if 2 <= len(phrase) <= 20:
                found.append((phrase, tech_type(phrase) or "CONCEPT"))
        return found

    # ------------------------------------------------------------------ English
