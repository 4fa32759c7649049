"""Rules that find entities and relations in English text (capitalised names, verbs and roles).

What they find and miss is listed in docs/extraction.md.
"""

from __future__ import annotations

from typing import Any

from hello_pgmem.graph import lexicon as lx
from hello_pgmem.graph.not_entities import is_not_an_entity
from hello_pgmem.graph.relations_en import SUBJECT_VERBS, Sentence, possessive_role, verb
from hello_pgmem.graph.tokens import SPACY_LABELS, is_trained, spacy_pipeline, tech_type

Entities = list[tuple[str, str]]
Relations = list[tuple[str, str, str]]


class EnglishRules:
    """Entities and relations of an English text."""

    def extract(self, text: str) -> tuple[Entities, Relations]:
        return self._english(text)

    def _english(self, text: str) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
        """Entities from spaCy (when its model is trained), capitalised names and technologies;
        relations from the patterns of :mod:`hello_pgmem.graph.relations_en`, each verb of a
        sentence relating the subject the sentence is about."""
        nlp = spacy_pipeline("en")
        doc = nlp(text)
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
        sentence = Sentence([t.text for t in doc], names, kinds)
        subject: str | None = None
        for i in range(len(sentence.words)):
            here = sentence.name_at(i)
            if (
                here
                and kinds.get(here) in ("MISC", "PERSON")
                and self._en_is_subject(sentence.lowered, i, here)
            ):
                subject = here
                kinds[here] = "PERSON"
            subject = possessive_role(sentence, i, subject)
            if subject:  # a pronoun goes on about the subject before it
                verb(sentence, i, subject)
        return list(kinds.items()), sentence.relations

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
    def _en_is_subject(lowered: list[str], i: int, name: str) -> bool:
        """Whether the name at token ``i`` is followed by a verb that makes it the subject."""
        after = i + len(name.split(" "))
        return after < len(lowered) and lowered[after] in SUBJECT_VERBS
