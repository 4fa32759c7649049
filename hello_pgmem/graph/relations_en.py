"""English relation patterns over a tokenised sentence and the names found in it: the verbs of a
subject (works at, lives in, moved to, married, joined, comes from, is a) and a person's roles
for another (Alice's manager is Carol; Carol is Alice's manager; Carol, Alice's manager; Evan is
the brother of Frank). Each pattern is one small function; docs/extraction.md lists them."""

from __future__ import annotations

from dataclasses import dataclass, field

from hello_pgmem.graph import lexicon as lx
from hello_pgmem.graph.tokens import tech_type

PERSON_ROLES = frozenset(
    {
        "manager",
        "boss",
        "supervisor",
        "colleague",
        "coworker",
        "assistant",
        "mentor",
        "coach",
        "teacher",
        "student",
        "doctor",
        "dentist",
        "therapist",
        "lawyer",
        "landlord",
        "tenant",
        "neighbour",
        "neighbor",
        "roommate",
        "friend",
        "partner",
        "wife",
        "husband",
        "spouse",
        "girlfriend",
        "boyfriend",
        "fiance",
        "fiancee",
        "mother",
        "father",
        "mom",
        "dad",
        "parent",
        "son",
        "daughter",
        "child",
        "sister",
        "brother",
        "sibling",
        "cousin",
        "aunt",
        "uncle",
        "niece",
        "nephew",
        "grandmother",
        "grandfather",
        "grandson",
        "granddaughter",
    }
)
"""Roles a person holds for another person (``X's <role> is Y``)."""
MOVE_VERBS = frozenset({"moved", "moves", "move", "relocated", "relocates", "relocate"})
ENDS = frozenset({".", ";", "!", "?", ","})


@dataclass
class Sentence:
    """A sentence's tokens and names, and what the patterns found in it."""

    words: list[str]
    names: list[str]
    kinds: dict[str, str]
    relations: list[tuple[str, str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lowered = [w.lower() for w in self.words]

    def word(self, i: int) -> str:
        return self.lowered[i] if 0 <= i < len(self.lowered) else ""

    def name_at(self, i: int) -> str | None:
        """The name that starts at token ``i``, if any."""
        for name in self.names:
            parts = name.split(" ")
            if self.words[i : i + len(parts)] == parts:
                return name
        return None

    def name_ending_at(self, i: int) -> str | None:
        """The name whose last token is token ``i``, if any."""
        for name in self.names:
            parts = name.split(" ")
            start = i - len(parts) + 1
            if start >= 0 and self.words[start : i + 1] == parts:
                return name
        return None

    def relate(self, source: str, kind: str, target: str, source_kind: str, target_kind: str) -> None:
        self.kinds[source] = source_kind
        self.kinds[target] = target_kind
        if (source, kind, target) not in self.relations:
            self.relations.append((source, kind, target))


def role_after(s: Sentence, i: int) -> int | None:
    """Where a person role stands from token ``i`` (``Alice's older sister``: the last word of
    up to three)."""
    for j in range(i, min(i + 3, len(s.words))):
        if s.word(j) in PERSON_ROLES:
            return j
        if not s.words[j].isalpha() or s.word(j) in ("is", "was"):
            return None
    return None


def possessive_role(s: Sentence, i: int, subject: str | None) -> str | None:
    """``X's R is Y`` and ``Y, X's R, …``: (X, R, Y)."""
    if s.word(i) != "'s":
        return subject
    owner = s.name_ending_at(i - 1)
    at = role_after(s, i + 1)
    if owner is None or at is None:
        return subject
    role = s.word(at)
    if s.word(at + 1) in ("is", "was") and (person := s.name_at(at + 2)):
        s.relate(owner, role, person, "PERSON", "PERSON")
        return person  # "Bob's sister is Dana and she ...": the sentence goes on about Dana
    comma = i - len(owner.split(" ")) - 1
    if s.word(comma) == "," and (person := s.name_ending_at(comma - 1)):
        s.relate(owner, role, person, "PERSON", "PERSON")
        return person  # the apposition's person is what the sentence goes on about
    return subject


def role_of_other(s: Sentence, i: int, subject: str) -> None:
    """``Y is X's R`` and ``Y is the R of X``: (X, R, Y)."""
    owner = s.name_at(i + 1)
    if owner is not None:
        after = i + 1 + len(owner.split(" "))
        at = role_after(s, after + 1) if s.word(after) == "'s" else None
        if at is not None:
            s.relate(owner, s.word(at), subject, "PERSON", "PERSON")
        return
    kind_of = s.word(i + 1) == "the" and s.word(i + 2) in PERSON_ROLES and s.word(i + 3) == "of"
    if kind_of and (owner := s.name_at(i + 4)):
        s.relate(owner, s.word(i + 2), subject, "PERSON", "PERSON")


def role_words(s: Sentence, start: int) -> list[str]:
    """The words of a role after ``a``/``an`` (``a data scientist at …``: data scientist)."""
    role: list[str] = []
    for j in range(start, min(start + 4, len(s.words))):
        if s.word(j) in lx.EN_ROLE_STOP or not s.words[j].isalnum():
            break
        role.append(s.words[j])
    return role


def is_a(s: Sentence, subject: str, start: int) -> None:
    role = role_words(s, start)
    if role:
        name = " ".join(role)
        s.relate(subject, "is_a", name, "PERSON", "ROLE")
        for part in role:
            if tech_type(part):
                s.relations.append((subject, "skill", part))


def target_after(s: Sentence, i: int, word: str, kind: str, limit: int = 6) -> str | None:
    """The name after the first ``word`` within ``limit`` tokens of ``i`` (not past the clause)."""
    for j in range(i + 1, min(i + 1 + limit, len(s.words))):
        if s.words[j] in ENDS:
            return None
        if s.word(j) == word and (name := s.name_at(j + 1)):
            s.kinds[name] = kind
            return name
    return None


def verb(s: Sentence, i: int, subject: str) -> None:
    """The relation a verb at token ``i`` gives ``subject``, if any."""
    word, following = s.word(i), s.word(i + 1)
    if word in ("is", "was"):
        if following in ("a", "an"):
            is_a(s, subject, i + 2)
        elif following == "from" and (place := s.name_at(i + 2)):
            s.relate(subject, "from", place, "PERSON", "LOCATION")
        elif following == "married" and s.word(i + 2) == "to" and (other := s.name_at(i + 3)):
            s.relate(subject, "married_to", other, "PERSON", "PERSON")
        else:
            role_of_other(s, i, subject)
    elif word in ("works", "worked", "work"):
        if following in ("at", "for") and (org := s.name_at(i + 2)):
            s.relate(subject, "works_at", org, "PERSON", "ORG")
        elif following == "as" and s.word(i + 2) in ("a", "an"):
            is_a(s, subject, i + 3)
    elif word in ("joined", "joins") and (org := s.name_at(i + 1)):
        s.relate(subject, "works_at", org, "PERSON", "ORG")
    elif (word in ("lives", "lived", "live") and following == "in" and (place := s.name_at(i + 2))) or (
        word in MOVE_VERBS and (place := target_after(s, i, "to", "LOCATION"))
    ):
        s.relate(subject, "lives_in", place, "PERSON", "LOCATION")
    elif word in ("comes", "came") and following == "from" and (place := s.name_at(i + 2)):
        s.relate(subject, "from", place, "PERSON", "LOCATION")
    elif word == "married":
        other = s.name_at(i + 1) or (s.name_at(i + 2) if following == "to" else None)
        if other:
            s.relate(subject, "married_to", other, "PERSON", "PERSON")
    elif word in lx.EN_OBJECT_VERBS:
        object_of(s, i, subject)


def object_of(s: Sentence, i: int, subject: str) -> None:
    """``likes``, ``uses``, …: the first name or technology after the verb in the clause."""
    for j in range(i + 1, min(i + 8, len(s.words))):
        if s.words[j] in (".", ";", "!", "?"):
            return
        target = s.name_at(j) or (s.words[j] if tech_type(s.words[j]) else None)
        if target:
            s.relations.append((subject, lx.EN_OBJECT_VERBS[s.word(i)], target))
            s.kinds.setdefault(target, tech_type(target) or "MISC")
            return


SUBJECT_VERBS = frozenset(
    {
        "is",
        "was",
        "works",
        "worked",
        "lives",
        "lived",
        "joined",
        "joins",
        "comes",
        "came",
        "married",
        "got",
        *MOVE_VERBS,
        *lx.EN_OBJECT_VERBS,
    }
)
"""Words that make the name before them the sentence's subject."""
