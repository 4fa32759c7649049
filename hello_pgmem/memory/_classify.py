"""The reference's heuristics: importance when none is given, and type classification.

Importance starts at 0.5; +0.1 for content longer than 100 characters; +0.2 when it contains
a word that marks importance (重要, 关键, 必须, 注意, 警告, 错误, and the English important,
critical, must, warning, error, remember); +0.3 for ``metadata["priority"] == "high"``, −0.2
for ``"low"``; clamped to [0, 1].

Classification (only when asked, ``auto_classify=True``): ``metadata["type"]`` when it names a
type; else episodic when the content speaks of an event (昨天, 今天, 明天, 上次, 记得, 发生,
经历, yesterday, today, tomorrow, last time, happened); else semantic when it speaks of
knowledge (定义, 概念, 规则, 知识, 原理, 方法, definition, concept, rule, principle); else working.
"""

from __future__ import annotations

from typing import Any

from hello_pgmem.core.models import MEMORY_TYPES, MemoryType

IMPORTANT_WORDS = (
    "重要",
    "关键",
    "必须",
    "注意",
    "警告",
    "错误",
    "important",
    "critical",
    "must",
    "warning",
    "error",
    "remember",
)
EPISODIC_WORDS = (
    "昨天",
    "今天",
    "明天",
    "上次",
    "记得",
    "发生",
    "经历",
    "yesterday",
    "today",
    "tomorrow",
    "last time",
    "happened",
)
SEMANTIC_WORDS = (
    "定义",
    "概念",
    "规则",
    "知识",
    "原理",
    "方法",
    "definition",
    "concept",
    "rule",
    "principle",
)


def estimate_importance(content: str, metadata: dict[str, Any] | None = None) -> float:
    """The documented importance heuristic (module docstring)."""
    lowered = content.lower()
    score = 0.5
    if len(content) > 100:
        score += 0.1
    if any(word in lowered for word in IMPORTANT_WORDS):
        score += 0.2
    priority = (metadata or {}).get("priority")
    if priority == "high":
        score += 0.3
    elif priority == "low":
        score -= 0.2
    return round(max(0.0, min(1.0, score)), 6)


def classify(content: str, metadata: dict[str, Any] | None = None) -> MemoryType:
    """The memory type the reference's keyword lists suggest (module docstring)."""
    declared = (metadata or {}).get("type")
    if declared in MEMORY_TYPES:
        result: MemoryType = declared
        return result
    lowered = content.lower()
    if any(word in lowered for word in EPISODIC_WORDS):
        return "episodic"
    if any(word in lowered for word in SEMANTIC_WORDS):
        return "semantic"
    return "working"
