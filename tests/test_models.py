"""MemoryItem and MemoryConfig validation: errors name the field and the rule."""

from __future__ import annotations

from datetime import datetime

import pytest

from hello_pgmem import InvalidInputError
from hello_pgmem.core.models import MemoryConfig, MemoryItem
from hello_pgmem.core.text import count_tokens, keyword_score, tokenize
from hello_pgmem.memory import classify, estimate_importance


def item(**fields: object) -> MemoryItem:
    base: dict[str, object] = {"content": "x", "memory_type": "episodic", "user_id": "u"}
    return MemoryItem.build(20_000, **{**base, **fields})


@pytest.mark.parametrize(
    ("fields", "field", "rule"),
    [
        ({"content": ""}, "content", "must not be empty or whitespace"),
        ({"content": " \n\t"}, "content", "must not be empty or whitespace"),
        ({"content": "x" * 20_001}, "content", "must be at most 20000 characters"),
        ({"content": "bad \ud800 surrogate"}, "content", "valid Unicode"),
        ({"importance": 1.5}, "importance", "less than or equal to 1"),
        ({"importance": -0.1}, "importance", "greater than or equal to 0"),
        ({"importance": float("nan")}, "importance", "finite number"),
        (
            {"memory_type": "procedural"},
            "memory_type",
            "'working', 'episodic', 'semantic' or 'perceptual'",
        ),
        ({"metadata": [1, 2]}, "metadata", "must be a JSON object"),
        ({"metadata": {"x": float("nan")}}, "metadata", "without NaN"),
        ({"user_id": ""}, "user_id", "must be a non-empty string"),
        ({"timestamp": datetime(2026, 1, 1)}, "timestamp", "timezone"),
    ],
)
def test_bad_items_name_the_field_and_rule(fields: dict[str, object], field: str, rule: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        item(**fields)
    assert caught.value.field == field
    assert rule in caught.value.rule


def test_content_limit_is_configurable() -> None:
    with pytest.raises(InvalidInputError, match="at most 10 characters"):
        MemoryItem.build(10, content="x" * 11, memory_type="working", user_id="u")
    assert MemoryItem.build(10, content="x" * 10, memory_type="working", user_id="u").content == "x" * 10


def test_defaults() -> None:
    made = item()
    assert made.importance == 0.5 and made.metadata == {} and made.timestamp.tzinfo is not None
    config = MemoryConfig()
    assert (config.max_capacity, config.importance_threshold, config.decay_factor) == (
        100,
        0.1,
        0.95,
    )
    assert (
        config.working_memory_capacity,
        config.working_memory_tokens,
        config.working_memory_ttl_minutes,
    ) == (10, 2000, 120)
    assert config.perceptual_memory_modalities == ["text", "image", "audio", "video"]


def test_importance_heuristic() -> None:
    assert estimate_importance("普通的一句话") == 0.5
    assert estimate_importance("这很重要") == pytest.approx(0.7)
    assert estimate_importance("x" * 101) == pytest.approx(0.6)
    assert estimate_importance("必须注意这个错误" + "x" * 100, {"priority": "high"}) == 1.0
    assert estimate_importance("随便", {"priority": "low"}) == pytest.approx(0.3)


def test_classification() -> None:
    assert classify("昨天我们去了公园") == "episodic"
    assert classify("机器学习的定义是什么") == "semantic"
    assert classify("随便说说") == "working"
    assert classify("随便说说", {"type": "semantic"}) == "semantic"


def test_chinese_tokens_and_counts() -> None:
    assert tokenize("前端工程师 React") == ["前端", "端工", "工程", "程师", "react"]
    assert count_tokens("李四是前端工程师") == 8
    assert count_tokens("Hello world, again!") == 5


def test_keyword_score() -> None:
    content = "李四是前端工程师，擅长React和Vue.js开发"
    assert keyword_score("前端工程师", content) == pytest.approx(5 / len(content))
    assert 0 < keyword_score("工程师 React 后端", content) < 0.8
    assert keyword_score("产品经理", content) == 0.0


def test_config_overrides_settings() -> None:
    from hello_pgmem import MemoryManager, Settings

    manager = MemoryManager(
        MemoryConfig(schema_name="agent_mem", embed_model_type="hashing"),
        "u",
        settings=Settings(schema_name="pgmem", embed_model_type="auto"),
    )
    assert (manager.settings.schema_name, manager.settings.embed_model_type) == ("agent_mem", "hashing")
    assert manager.embedder.model_name == "hashing-v1-384"
