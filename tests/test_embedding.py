"""The embedding chain: hashing offline, the OpenAI-compatible API over real HTTP, selection."""

from __future__ import annotations

import logging
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from hello_pgmem import ConfigurationError, EmbeddingError, Settings
from hello_pgmem.embedding import HashingEmbedder, OpenAIEmbedder, create_embedder, select
from tests.fake_openai import FakeOpenAI, fake_vector, serve

PEOPLE = [
    "用户张三是一名Python开发者，专注于机器学习和数据分析",
    "李四是前端工程师，擅长React和Vue.js开发",
    "王五是产品经理，负责用户体验设计和需求分析",
]


def test_hashing_vectors_are_normalised_and_deterministic(embedder: HashingEmbedder) -> None:
    vectors = embedder.encode(PEOPLE)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    again = HashingEmbedder().encode(PEOPLE)
    assert np.array_equal(vectors, again)


def test_hashing_is_the_same_in_another_process(embedder: HashingEmbedder) -> None:
    code = (
        "from hello_pgmem.embedding import HashingEmbedder; import sys; "
        "sys.stdout.write(HashingEmbedder().encode_one('前端工程师 React').tobytes().hex())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert bytes.fromhex(out) == embedder.encode_one("前端工程师 React").tobytes()


def test_hashing_finds_chinese_and_english_overlap(embedder: HashingEmbedder) -> None:
    scores = embedder.encode(PEOPLE) @ embedder.encode_one("前端工程师")
    assert int(np.argmax(scores)) == 1
    english = embedder.encode(["The history of the Python language", "Baking bread at home"])
    assert int(np.argmax(english @ embedder.encode_one("Python history"))) == 0


def test_hashing_never_returns_a_zero_vector(embedder: HashingEmbedder) -> None:
    vector = embedder.encode_one("。，！")
    assert np.linalg.norm(vector) == pytest.approx(1.0)
    with pytest.raises(TypeError):
        embedder.encode("not a list")


def test_openai_endpoint_batches_and_keeps_order() -> None:
    with serve(FakeOpenAI(dimension=8)) as fake:
        embedder = OpenAIEmbedder("text-embedding-v4", base_url=fake.base_url, api_key="k", batch_size=2)
        assert embedder.dimension == 8
        probe_calls = fake.embedding_calls()
        texts = [f"text {i}" for i in range(5)]
        vectors = embedder.encode(texts)
        assert fake.embedding_calls() - probe_calls == 3  # batches of 2, 2, 1
        for text, vector in zip(texts, vectors, strict=True):
            expected = np.asarray(fake_vector(text, 8), dtype=np.float32)
            assert np.allclose(vector, expected / np.linalg.norm(expected), atol=1e-6)
        assert fake.requests[-1]["body"]["model"] == "text-embedding-v4"


def test_openai_endpoint_errors_are_embedding_errors() -> None:
    with serve(FakeOpenAI(dimension=8)) as fake:
        embedder = OpenAIEmbedder("m", base_url=fake.base_url, dimension=8, max_retries=0)
        fake.fail_status = 500
        with pytest.raises(EmbeddingError, match="embedding request to 'm' failed"):
            embedder.encode(["x"])
        fake.fail_status = None
        fake.zero_vectors = True
        with pytest.raises(EmbeddingError, match="zero vector"):
            embedder.encode(["x"])


def test_openai_endpoint_times_out() -> None:
    with serve(FakeOpenAI(dimension=8, delay_s=1.5)) as fake:
        embedder = OpenAIEmbedder("m", base_url=fake.base_url, dimension=8, timeout_s=0.3, max_retries=1)
        with pytest.raises(EmbeddingError):
            embedder.encode(["x"])
        assert fake.embedding_calls() == 2  # the first try and one retry


def test_wrong_dimension_from_the_endpoint() -> None:
    with serve(FakeOpenAI(dimension=8)) as fake:
        embedder = OpenAIEmbedder("m", base_url=fake.base_url, dimension=16, max_retries=0)
        with pytest.raises(EmbeddingError, match="expected 16 dimensions, got 8"):
            embedder.encode(["x"])


def test_auto_prefers_a_configured_endpoint(caplog: pytest.LogCaptureFixture) -> None:
    with serve(FakeOpenAI(dimension=8)) as fake:
        caplog.set_level(logging.INFO, "hello_pgmem.embedding")
        chosen = create_embedder(
            Settings(embed_model_type="auto", embed_base_url=fake.base_url, embed_api_key="k")
        )
        assert isinstance(chosen, OpenAIEmbedder)
        assert "via OpenAI-compatible endpoint" in caplog.text


def test_auto_falls_back_to_hashing_when_the_endpoint_is_down(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(select, "sentence_transformers_installed", lambda: False)  # no [local] extra
    caplog.set_level(logging.INFO, "hello_pgmem.embedding")
    settings = Settings(
        embed_model_type="auto",
        embed_base_url="http://127.0.0.1:1/v1",
        embed_api_key="k",
        embed_timeout_s=1,
        embed_max_retries=0,
    )
    chosen = create_embedder(settings)
    assert isinstance(chosen, HashingEmbedder)
    assert "hashing-v1-384 (hashing, offline)" in caplog.text
    assert "embedding endpoint unavailable" in caplog.text


def test_auto_without_configuration_is_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(select, "sentence_transformers_installed", lambda: False)  # no [local] extra
    chosen = create_embedder(Settings(embed_model_type="auto"))
    assert chosen.model_name == "hashing-v1-384"


def test_an_explicit_backend_that_fails_is_an_error() -> None:
    settings = Settings(
        embed_model_type="openai",
        embed_base_url="http://127.0.0.1:1/v1",
        embed_timeout_s=1,
        embed_max_retries=0,
    )
    with pytest.raises(EmbeddingError):
        create_embedder(settings)
    with pytest.raises(ConfigurationError, match="EMBED_MODEL_TYPE must be"):
        create_embedder(Settings(embed_model_type="word2vec"))


def test_hashing_vectors_are_scikit_learns(embedder: HashingEmbedder) -> None:
    """Version 1 of the hashing model was scikit-learn's HashingVectorizer; the vectors stay identical."""
    from sklearn.feature_extraction.text import HashingVectorizer

    from hello_pgmem.embedding.hashing import word_ngrams

    texts = [
        "李四是前端工程师，擅长React和Vue.js开发",
        "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
        "  runs   of\n\nwhite\tspace ",
        "Ｆｕｌｌ　ｗｉｄｔｈ and Ünïcödé",
        "。，！",
        "x" * 500,
    ]
    common: dict[str, Any] = {"n_features": 384, "alternate_sign": True, "norm": None, "lowercase": True}
    chars = HashingVectorizer(analyzer="char", ngram_range=(1, 3), **common).transform(texts).toarray()
    words = HashingVectorizer(analyzer=word_ngrams, **common).transform(texts).toarray()
    expected = np.sign(chars) * np.log1p(np.abs(chars)) + 0.7 * np.sign(words) * np.log1p(np.abs(words))
    expected[~np.any(expected, axis=1), 0] = 1.0
    expected = expected.astype(np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.array_equal(embedder.encode(texts), expected)
