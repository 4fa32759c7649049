"""Query expansion with a chat model: MQE (alternative queries) and HyDE (a hypothetical answer).

The prompts are the reference's in Chinese, and the same in English. A failed call (timeout,
error, empty answer) degrades to no expansion with one warning; without a chat model expansion is
skipped with one info line.
"""

from __future__ import annotations

import logging

from hello_pgmem.core.errors import LLMError
from hello_pgmem.core.i18n import Language
from hello_pgmem.llm import ChatClient

log = logging.getLogger(__name__)

MQE_SYSTEM: dict[Language, str] = {
    "zh": "你是检索查询扩展助手。生成语义等价或互补的多样化查询。使用中文，简短，避免标点。",
    "en": "You expand search queries. Write diverse queries that mean the same or complement the "
    "original. Use the query's language, keep them short, avoid punctuation.",
}
MQE_USER: dict[Language, str] = {
    "zh": "原始查询：{query}\n请给出{n}个不同表述的查询，每行一个。",
    "en": "Original query: {query}\nGive {n} different phrasings of it, one per line.",
}
HYDE_SYSTEM: dict[Language, str] = {
    "zh": "根据用户问题，先写一段可能的答案性段落，用于向量检索的查询文档（不要分析过程）。",
    "en": "From the user's question, write a passage that could answer it, to be used as the query "
    "document of a vector search (no reasoning).",
}
HYDE_USER: dict[Language, str] = {
    "zh": "问题：{query}\n请直接写一段中等长度、客观、包含关键术语的段落。",
    "en": "Question: {query}\nWrite one objective paragraph of medium length with the key terms.",
}


def multi_queries(llm: ChatClient, query: str, n: int = 2, language: Language = "en") -> list[str]:
    """Up to ``n`` alternative phrasings of ``query`` ([] when the model fails)."""
    if n <= 0:
        return []
    messages = [
        {"role": "system", "content": MQE_SYSTEM[language]},
        {"role": "user", "content": MQE_USER[language].format(query=query, n=n)},
    ]
    try:
        text = llm.complete(messages)
    except LLMError as exc:
        log.warning("query expansion (MQE) failed, searching without it: %s", exc)
        return []
    lines = [line.strip().lstrip("-•*0123456789.、) \t").strip() for line in text.splitlines()]
    return [line for line in dict.fromkeys(lines) if line and line != query][:n]


def hypothetical_answer(llm: ChatClient, query: str, language: Language = "en") -> str | None:
    """A passage that could answer ``query``, to embed instead of it (None when the model fails)."""
    messages = [
        {"role": "system", "content": HYDE_SYSTEM[language]},
        {"role": "user", "content": HYDE_USER[language].format(query=query)},
    ]
    try:
        return llm.complete(messages).strip() or None
    except LLMError as exc:
        log.warning("hypothetical document (HyDE) failed, searching without it: %s", exc)
        return None
