"""MemoryExtractor: the memories worth keeping from one conversation turn (chat model, JSON mode).

Kinds map onto memory types: ``event`` -> episodic; ``fact``, ``preference`` and ``lesson`` ->
semantic (knowledge about the user and the world, which also feeds the knowledge graph).
"Nothing worth keeping" is an empty list; output that does not validate is rejected whole, and
nothing is stored.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

from hello_pgmem.core.i18n import Language
from hello_pgmem.core.models import MemoryType
from hello_pgmem.graph.extraction import ExtractedEntity, ExtractedRelation, Extraction
from hello_pgmem.llm import ChatClient

Kind = Literal["fact", "preference", "event", "lesson"]
KIND_TO_TYPE: dict[str, MemoryType] = {
    "event": "episodic",
    "fact": "semantic",
    "preference": "semantic",
    "lesson": "semantic",
}

PROMPT: dict[Language, str] = {
    "zh": """分析以下对话，提取值得长期记忆的信息。

用户：{user}
助手：{assistant}

只提取以下类型的信息：
1. 用户明确表达的偏好或习惯（preference）
2. 用户提到的客观事实，如姓名、职业、地址、项目（fact）
3. 重要的交互事件（event）
4. 从错误或反馈中学到的教训（lesson）

不要提取：通用知识、闲聊内容、一次性指令。每条记忆写成一句完整、独立的陈述，主语明确（如“用户叫张三”）。

只输出一个 JSON 对象：
{{"memories": [{{"content": "…", "kind": "fact|preference|event|lesson", "importance": 0.0-1.0,
  "entities": [{{"name": "…", "type": "PERSON|ORG|LOCATION|TECHNOLOGY|ROLE|CONCEPT|MISC"}}],
  "relations": [{{"source": "…", "type": "…", "target": "…"}}]}}]}}
如果没有值得记忆的内容，返回 {{"memories": []}}。""",
    "en": """Read the conversation below and pick out what is worth remembering for the long term.

User: {user}
Assistant: {assistant}

Pick only these kinds of information:
1. preferences or habits the user states (preference)
2. facts the user mentions, such as a name, job, address or project (fact)
3. important events of the conversation (event)
4. lessons learned from a mistake or feedback (lesson)

Leave out general knowledge, small talk and one-off instructions. Write each memory as one whole,
self-contained sentence with a clear subject (such as "The user's name is Alice").

Answer with one JSON object only:
{{"memories": [{{"content": "…", "kind": "fact|preference|event|lesson", "importance": 0.0-1.0,
  "entities": [{{"name": "…", "type": "PERSON|ORG|LOCATION|TECHNOLOGY|ROLE|CONCEPT|MISC"}}],
  "relations": [{{"source": "…", "type": "…", "target": "…"}}]}}]}}
If nothing is worth remembering, answer {{"memories": []}}.""",
}


class ExtractedMemory(BaseModel):
    content: str = Field(min_length=1, max_length=2000)
    kind: Kind
    importance: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    entities: list[ExtractedEntity] = Field(default_factory=list, max_length=50)
    relations: list[ExtractedRelation] = Field(default_factory=list, max_length=100)

    @field_validator("entities", mode="before")
    @classmethod
    def _names_allowed(cls, value: object) -> object:
        """Entities may be given as plain names."""
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content must not be blank")
        return value.strip()

    @property
    def memory_type(self) -> MemoryType:
        return KIND_TO_TYPE[self.kind]

    def extraction(self) -> Extraction:
        return Extraction(entities=self.entities, relations=self.relations)


class ExtractionResult(BaseModel):
    memories: list[ExtractedMemory] = Field(default_factory=list, max_length=20)


class MemoryExtractor:
    """Asks the chat model which memories a turn holds."""

    def __init__(self, llm: ChatClient, language: Language = "en") -> None:
        self.llm = llm
        self.language = language

    def extract(self, user_message: str, assistant_message: str) -> list[ExtractedMemory]:
        """The memories of one turn; raises LLMError when the model fails or answers badly."""
        prompt = PROMPT[self.language].format(user=user_message, assistant=assistant_message)
        result = self.llm.complete_json([{"role": "user", "content": prompt}], ExtractionResult)
        return result.memories
