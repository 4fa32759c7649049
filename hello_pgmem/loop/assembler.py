"""MemoryAssembler: a compact Markdown context of what the agent remembers about a message.

    ## Related memories
    - The user's name is Alice; she is a Python developer
    ## Related relations
    - Alice —is_a→ Python developer

(with ``language="zh"`` the headers are the reference's: ``## 相关记忆``, ``## 相关关系``)

Memories come from vector recall (episodic and semantic, each at least ``min_score``); relations
from the knowledge graph around the entities the message names (depth 1). Lines are scored — a
memory by its relevance, a relation by its weight relative to the strongest — and the lowest-scored
lines are dropped first until the block fits ``max_tokens``; a line is never cut.
"""

from __future__ import annotations

from dataclasses import dataclass

from hello_pgmem.core.i18n import Language
from hello_pgmem.core.text import token_counter
from hello_pgmem.graph.normalize import name_candidates
from hello_pgmem.memory import MemoryManager

MEMORY, RELATION = "memories", "relations"
HEADERS: dict[Language, dict[str, str]] = {
    "zh": {MEMORY: "## 相关记忆", RELATION: "## 相关关系"},
    "en": {MEMORY: "## Related memories", RELATION: "## Related relations"},
}


@dataclass(frozen=True)
class ContextLine:
    section: str
    text: str
    score: float


class MemoryAssembler:
    def __init__(
        self, manager: MemoryManager, min_score: float = 0.15, limit: int = 8, *, language: Language = "en"
    ) -> None:
        self.manager = manager
        self.min_score = min_score
        self.limit = limit
        self.language = language

    def lines(self, message: str) -> list[ContextLine]:
        manager = self.manager
        types = [t for t in ("episodic", "semantic") if t in manager.enabled_types]
        found: list[ContextLine] = []
        if types:
            for item in manager.retrieve_memories(message, memory_types=types, limit=self.limit):
                if (item.score or 0) >= self.min_score:
                    found.append(ContextLine(MEMORY, f"- {item.content}", float(item.score or 0)))
        with manager.transaction() as conn:
            seeds = manager.in_transaction(conn).known_entities(name_candidates(message))
        relations: dict[str, float] = {}
        for seed in seeds:
            hood = manager.graph_neighbourhood(seed, depth=1)
            for relation in hood.relations if hood else []:
                text = f"- {relation.source} —{relation.relation_type}→ {relation.target}"
                relations[text] = max(relations.get(text, 0.0), relation.weight)
        strongest = max(relations.values(), default=1.0)
        found += [ContextLine(RELATION, text, weight / strongest) for text, weight in relations.items()]
        return found

    def build_context(self, message: str, max_tokens: int = 1500) -> str:
        """The Markdown block for ``message`` within ``max_tokens`` ("" when nothing is relevant)."""
        return render(self.lines(message), max_tokens, self.language)


def render(lines: list[ContextLine], max_tokens: int, language: Language = "en") -> str:
    """Sections in fixed order; the lowest-scored lines dropped first until the text fits."""
    count = token_counter()
    kept = sorted(lines, key=lambda line: -line.score)
    while kept:
        text = _text(kept, HEADERS[language])
        if count(text) <= max_tokens:
            return text
        kept.pop()  # the lowest score goes first
    return ""


def _text(lines: list[ContextLine], headers: dict[str, str]) -> str:
    parts: list[str] = []
    for kind in (MEMORY, RELATION):
        section = [line.text for line in lines if line.section == kind]
        if section:
            parts += [headers[kind], *section]
    return "\n".join(parts)
