"""Rules that find entities and relations in English text (capitalised names, a few verbs).

What they find and miss is listed in docs/extraction.md.
"""

from __future__ import annotations

from typing import Any

from hello_pgmem.graph import lexicon as lx
from hello_pgmem.graph.not_entities import is_not_an_entity
from hello_pgmem.graph.tokens import SPACY_LABELS, is_trained, spacy_pipeline, tech_type

Entities = list[tuple[str, str]]
Relations = list[tuple[str, str, str]]


class EnglishRules:
    """Entities and relations of an English text."""

    def extract(self, text: str) -> tuple[Entities, Relations]:
        return self._english(text)

    def _english(self, text: str) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
        """English sentences as entities and relations, from spaCy's parse and the patterns of
        the rule extractor. Long because each pattern is one branch, read top to bottom."""
        nlp = spacy_pipeline("en")
        doc = nlp(text)
        entities: list[tuple[str, str]] = []
        kinds: dict[str, str] = {}
        if is_trained(nlp):
            for ent in doc.ents:
                label = SPACY_LABELS.get(ent.label_)
                if label:
                    kinds[ent.text] = label
        names = self._en_names(doc)
        for name in names:
            default = "ORG" if name.lower() in lx.KNOWN_ORGS else "MISC"
            kinds.setdefault(name, tech_type(name) or default)
        for token in doc:
            if tech_type(token.text):
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
                        if tech_type(part):
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
                    target = self._en_name_at(names, words, j) or (words[j] if tech_type(words[j]) else None)
                    if target:
                        relations.append((subject, lx.EN_OBJECT_VERBS[word], target))
                        kinds.setdefault(target, tech_type(target) or "MISC")
        entities = [(name, kind) for name, kind in kinds.items()]
        return entities, relations

    @staticmethod
    def _en_names(doc: Any) -> list[str]:
        """Runs of capitalised words (not pronouns, interjections or sentence-initial function words)."""
        names: list[str] = []
        run: list[str] = []
        for token in [*doc, None]:
            text = token.text if token is not None else ""
            capital = token is not None and (token.is_title or (token.is_upper and len(text) > 1))
            lowered = text.lower()
            if capital and lowered not in lx.EN_STOP_TITLE and not is_not_an_entity(lowered):
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
