"""Perceptual memory: media found by media, by description, filtered by modality."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from hello_pgmem import Database, InvalidInputError
from hello_pgmem.memory import MemoryManager
from hello_pgmem.perceptual.encoders import ImageFeatureEncoder, WavSpectrumEncoder, infer_modality
from hello_pgmem.tools import MemoryTool
from tests import media
from tests.conftest import table_digest


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    sun = media.sunset(tmp_path / "sunset.png")
    return {
        "sunset": sun,
        "sunset_small": media.resized(sun, tmp_path / "sunset_small.jpg", (96, 72)),
        "forest": media.forest(tmp_path / "forest.png"),
        "a440": media.tone(tmp_path / "a440.wav", 440),
        "a440_copy": Path(shutil.copy(tmp_path / "a440.wav", tmp_path / "a440_copy.wav")),
        "noise": media.tone(tmp_path / "hiss.wav", 3000, noise=0.4),
    }


def test_image_encoder_matches_a_resized_copy(files: dict[str, Path]) -> None:
    encoder = ImageFeatureEncoder()
    original, small, other = (
        encoder.encode_file(str(files[k])) for k in ("sunset", "sunset_small", "forest")
    )
    assert float(original @ small) > 0.95
    assert float(original @ other) < float(original @ small) - 0.3


def test_audio_encoder_matches_its_copy(files: dict[str, Path]) -> None:
    encoder = WavSpectrumEncoder()
    tone, copy, hiss = (encoder.encode_file(str(files[k])) for k in ("a440", "a440_copy", "noise"))
    assert float(tone @ copy) == pytest.approx(1.0)
    assert float(tone @ hiss) < 0.9


def perceptual_manager(make_manager: Callable[..., MemoryManager]) -> MemoryManager:
    return make_manager(enable_perceptual=True)


def test_an_image_and_its_resized_copy_find_each_other(
    make_manager: Callable[..., MemoryManager], files: dict[str, Path]
) -> None:
    manager = perceptual_manager(make_manager)
    sunset = manager.add_memory("海边的红色日落照片", "perceptual", 0.6, {"file_path": str(files["sunset"])})
    forest = manager.add_memory("绿色的森林照片", "perceptual", 0.6, {"file_path": str(files["forest"])})
    found = manager.retrieve_memories(str(files["sunset_small"]), query_modality="image", limit=2)
    assert [m.id for m in found] == [sunset, forest]
    assert found[0].components["vector_score"] > 0.95
    assert found[0].score is not None and found[1].score is not None and found[0].score > found[1].score
    stored = manager.get_memory(sunset)
    assert stored is not None and stored.modality == "image"
    assert len(stored.metadata["file_hash"]) == 64


def test_a_wav_finds_its_own_copy(make_manager: Callable[..., MemoryManager], files: dict[str, Path]) -> None:
    manager = perceptual_manager(make_manager)
    tone = manager.add_memory("一段 440Hz 的提示音", "perceptual", 0.5, {"file_path": str(files["a440"])})
    manager.add_memory("白噪声", "perceptual", 0.5, {"file_path": str(files["noise"])})
    found = manager.retrieve_memories(str(files["a440_copy"]), query_modality="audio", limit=2)
    assert found[0].id == tone and found[0].components["vector_score"] == pytest.approx(1.0)


def test_text_queries_cross_modalities_through_descriptions(
    make_manager: Callable[..., MemoryManager], files: dict[str, Path]
) -> None:
    manager = perceptual_manager(make_manager)
    image = manager.add_memory("海边的红色日落照片", "perceptual", 0.6, {"file_path": str(files["sunset"])})
    sound = manager.add_memory(
        "海浪和日落时的风声录音", "perceptual", 0.6, {"file_path": str(files["noise"])}
    )
    note = manager.add_memory("日落时分记下的一句话", "perceptual", 0.6, {"modality": "text"})
    everything = {m.id for m in manager.retrieve_memories("日落", memory_types=["perceptual"], limit=5)}
    assert everything == {image, sound, note}
    only_images = manager.retrieve_memories("日落", memory_types=["perceptual"], target_modality="image")
    assert [m.id for m in only_images] == [image]
    only_audio = manager.retrieve_memories("日落", memory_types=["perceptual"], target_modality="audio")
    assert [m.id for m in only_audio] == [sound]
    with pytest.raises(InvalidInputError, match="target_modality"):
        manager.retrieve_memories(str(files["sunset"]), query_modality="image", target_modality="audio")


def test_recency_follows_the_perceptual_formula(
    make_manager: Callable[..., MemoryManager], files: dict[str, Path], clock: object
) -> None:
    manager = perceptual_manager(make_manager)
    manager.add_memory("海边的红色日落照片", "perceptual", 0.5, {"file_path": str(files["sunset"])})
    clock.advance(hours=48)  # type: ignore[attr-defined]
    [hit] = manager.retrieve_memories("日落照片", memory_types=["perceptual"], scoring="reference")
    assert hit.components["recency_score"] == pytest.approx(float(np.exp(-0.1 * 48 / 24)))


def test_tool_adds_media_and_infers_the_modality(
    make_tool: Callable[..., MemoryTool], files: dict[str, Path], clean: Database, tmp_path: Path
) -> None:
    tool = make_tool(memory_types=["working", "episodic", "semantic", "perceptual"], files_root=tmp_path)
    assert tool.run(
        "add", content="日落照片", memory_type="perceptual", file_path=str(files["sunset"])
    ).startswith("✅")
    assert tool.run(
        "add", content="提示音", memory_type="perceptual", file_path=str(files["a440"])
    ).startswith("✅")
    with clean.connection() as conn:
        rows = conn.execute("SELECT modality, embedding_model FROM memories ORDER BY modality").fetchall()
    assert rows == [("audio", "audio-spectrum-v1-96"), ("image", "image-features-v1-192")]
    result = tool.run("search", query=str(files["sunset_small"]), query_modality="image")
    assert "日落照片" in result.splitlines()[1]


@pytest.mark.parametrize(
    ("make_file", "field"),
    [
        (lambda d: d / "missing.png", "file_path"),
        (lambda d: (d / "broken.png").write_bytes(b"\x89PNG not really") and d / "broken.png", "file_path"),
        (lambda d: (d / "broken.wav").write_bytes(b"RIFF....WAVEjunk") and d / "broken.wav", "file_path"),
    ],
)
def test_a_missing_or_unreadable_file_stores_nothing(
    make_tool: Callable[..., MemoryTool],
    clean: Database,
    tmp_path: Path,
    make_file: Callable[[Path], Path],
    field: str,
) -> None:
    tool = make_tool(memory_types=["working", "episodic", "semantic", "perceptual"], files_root=tmp_path)
    tool.run("add", content="已有记忆", memory_type="episodic")
    before = table_digest(clean)
    result = tool.run("add", content="坏文件", memory_type="perceptual", file_path=str(make_file(tmp_path)))
    assert result.startswith("❌ Adding the memory failed: file_path:"), result
    assert table_digest(clean) == before


def test_media_needs_a_file(make_manager: Callable[..., MemoryManager]) -> None:
    with pytest.raises(InvalidInputError, match="needs the file"):
        perceptual_manager(make_manager).add_memory("一张图", "perceptual", 0.5, {"modality": "image"})


def test_modality_inference() -> None:
    assert [infer_modality(p) for p in ("a.PNG", "b.wav", "c.mp4", "d.md", "noext")] == [
        "image",
        "audio",
        "video",
        "text",
        None,
    ]


def test_reembed_leaves_media_vectors_and_moves_descriptions(
    make_manager: Callable[..., MemoryManager], files: dict[str, Path], clean: Database
) -> None:
    from hello_pgmem.embedding import HashingEmbedder
    from hello_pgmem.memory import reembed

    manager = make_manager(enable_perceptual=True, embedder=HashingEmbedder(256))
    manager.add_memory("海边的红色日落照片", "perceptual", 0.6, {"file_path": str(files["sunset"])})
    manager.add_memory("一句话", "perceptual", 0.6, {"modality": "text"})
    manager.add_memory("一次会议", "episodic", 0.6)
    target = HashingEmbedder(384)
    assert reembed(clean, target) == 4  # episodic + text memory's embedding, two descriptions
    with clean.connection() as conn:
        rows = conn.execute(
            "SELECT coalesce(modality, memory_type), embedding_model, text_embedding_model"
            " FROM memories ORDER BY 1"
        ).fetchall()
    assert rows == [
        ("episodic", target.model_name, None),
        ("image", "image-features-v1-192", target.model_name),
        ("text", target.model_name, target.model_name),
    ]
    assert reembed(clean, target) == 0
