"""Answers with citations: numbered passages in, an answer that cites ``[n]`` out."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from hello_pgmem.core.i18n import Language
from hello_pgmem.rag.models import ChunkHit

# The chat model's instructions, in the knowledge base's language (the reference's are Chinese).
ANSWER_SYSTEM: dict[Language, str] = {
    "zh": """你是一个专业的知识助手。只根据提供的编号片段回答问题，不编造内容。
在用到某个片段的句子后用 [编号] 标注来源，例如 [1]、[2]。
如果片段不足以回答问题，请直接说明缺少哪些信息。""",
    "en": """You are a knowledgeable assistant. Answer only from the numbered passages given; make
nothing up. After a sentence that uses a passage, cite it by its number, such as [1] or [2].
If the passages are not enough to answer, say what is missing.""",
}
ANSWER_USER: dict[Language, str] = {
    "zh": "【问题】{question}\n\n【编号片段】\n{context}\n\n请回答，并用 [编号] 引用来源。",
    "en": "Question: {question}\n\nNumbered passages:\n{context}\n\nAnswer, citing the passages as [n].",
}
TRUNCATED: dict[Language, str] = {"zh": "\n[...更多内容被截断]", "en": "\n[... the rest was cut]"}


class Source(BaseModel):
    number: int
    document_id: str
    source_path: str | None
    heading_path: list[str]
    score: float  # the fused score the passages are ordered by
    similarity: float  # the cosine similarity of the passage to the question (vector_score)
    cited: bool = False


AnswerStatus = Literal["answered", "no_documents", "no_passages", "no_llm", "llm_failed"]
PASSAGES_ONLY_CHARS = 6000  # without a chat model the passages are the answer: show more of them


class Answer(BaseModel):
    question: str
    answer: str | None  # None without a chat model: the passages are the result
    sources: list[Source]
    context: str
    notice: str | None = None  # the reason there is no answer, in the knowledge base's language
    status: AnswerStatus = "answered"
    notes: list[str] = []  # what the search left out (a stage that failed, chunks waiting for vectors)


def build_context(
    hits: Sequence[ChunkHit], max_chars: int, language: Language = "en"
) -> tuple[str, list[ChunkHit]]:
    """Numbered passages ``[n] (document > heading) text`` that fit in ``max_chars``.

    Passages are added whole while they fit; the first one is cut (never mid-passage for the
    others) so that there is always at least one.
    """
    parts: list[str] = []
    used: list[ChunkHit] = []
    size = 0
    for hit in hits:
        where = " > ".join([hit.document_id, *hit.heading_path])
        text = re.sub(r"[ \t]+", " ", hit.content).strip()
        passage = f"[{len(used) + 1}] ({where})\n{text}"
        if size + len(passage) + 2 > max_chars:
            if not parts:
                cut = TRUNCATED[language]
                parts.append(passage[: max(0, max_chars - len(cut))] + cut)
                used.append(hit)
            break
        parts.append(passage)
        used.append(hit)
        size += len(passage) + 2
    return "\n\n".join(parts), used


def cited_numbers(answer: str) -> set[int]:
    return {int(n) for n in re.findall(r"\[(\d{1,3})\]", answer)}
