"""Extraction by a chat model in JSON mode, with the rule-based extractor as its fallback."""

from __future__ import annotations

import logging

from hello_pgmem.core.errors import LLMError
from hello_pgmem.core.i18n import Language
from hello_pgmem.graph.extracted import Extraction, Extractor
from hello_pgmem.graph.rules import RuleExtractor
from hello_pgmem.llm import ChatClient

log = logging.getLogger(__name__)


EXTRACTION_PROMPT: dict[Language, str] = {
    "zh": """从用户提供的文本中抽取知识图谱的实体和关系，只输出一个 JSON 对象：
{"entities": [{"name": "实体名",
               "type": "PERSON|ORG|LOCATION|TECHNOLOGY|ROLE|CONCEPT|EVENT|MISC"}],
 "relations": [{"source": "实体名", "type": "关系（简短动词或名词，如 职业、擅长、工作于）",
                "target": "实体名"}]}
规则：实体名取原文中的写法；关系的两端必须是抽取出的实体；没有就返回空列表；不要解释。""",
    "en": """Extract the knowledge graph's entities and relations from the user's text; answer with one
JSON object only:
{"entities": [{"name": "entity name",
               "type": "PERSON|ORG|LOCATION|TECHNOLOGY|ROLE|CONCEPT|EVENT|MISC"}],
 "relations": [{"source": "entity name", "type": "relation (a short verb or noun, such as works_at, "
                "manager_of, skilled_in)", "target": "entity name"}]}
Rules: write entity names as the text does; both ends of a relation must be extracted entities;
empty lists when there is nothing; no explanations.""",
}


class LLMExtractor:
    """Extraction by a chat model in JSON mode, falling back to ``fallback`` on any failure."""

    def __init__(
        self, client: ChatClient, fallback: Extractor | None = None, language: Language = "en"
    ) -> None:
        self.client = client
        self.fallback = fallback or RuleExtractor()
        self.language = language

    def extract(self, text: str) -> Extraction:
        messages = [
            {"role": "system", "content": EXTRACTION_PROMPT[self.language]},
            {"role": "user", "content": text},
        ]
        try:
            return self.client.complete_json(messages, Extraction)
        except LLMError as exc:
            log.warning("LLM extraction failed, using the rule-based extractor: %s", exc)
            return self.fallback.extract(text)
