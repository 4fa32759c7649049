"""Perceptual memory: images, audio and other media, with a text description.

Each memory has two vectors: its media vector in the space of its modality's encoder (one model,
hence one partial HNSW index, per modality), and the text vector of its description, so a text
query finds media of any modality ("cross-modal search through the text descriptions"), and a
file finds media of its own modality (:mod:`._reference`). A text memory's media vector is its
text vector.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import MemoryItem, MemoryType
from hello_pgmem.memory._longterm import LongTermMemory
from hello_pgmem.perceptual.encoders import MediaEncoder, file_hash, infer_modality, read_media


def check_text(path: Path, data: bytes) -> None:
    """A file of modality text must be UTF-8 text (a binary file needs its own modality)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            "file_path", f"{path.name!r} is not UTF-8 text: give its modality (image, audio or video)"
        ) from exc


class PerceptualMemory(LongTermMemory):
    """Media memories of one user, searchable by description or by a file of the same modality."""

    memory_type: MemoryType = "perceptual"

    def __init__(
        self,
        *args: Any,
        encoders: Mapping[str, MediaEncoder],
        modalities: Sequence[str] = ("text", "image", "audio", "video"),
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.encoders = dict(encoders)
        self.modalities = tuple(modalities)

    def _modality(self, item: MemoryItem) -> str:
        file_path = item.metadata.get("file_path")
        inferred = infer_modality(file_path) if file_path else "text"
        modality = item.modality or item.metadata.get("modality") or inferred
        if modality is None and not Path(str(file_path)).is_file():
            raise InvalidInputError("file_path", f"no such file: {str(file_path)[:200]!r}")
        if modality is None:
            raise InvalidInputError(
                "modality",
                f"cannot tell it from the extension of {file_path!r}: give text, image, audio or video",
            )
        if modality not in self.modalities:
            raise InvalidInputError(
                "modality", f"must be one of {', '.join(self.modalities)}, got {modality!r}"
            )
        if modality in ("image", "audio") and not file_path:
            raise InvalidInputError("file_path", f"a {modality} memory needs the file it describes")
        return str(modality)

    def encoder(self, modality: str) -> MediaEncoder | None:
        """The encoder of ``modality`` (its model registered with the database), or None."""
        encoder = self.encoders.get(modality)
        if encoder is not None:
            self.db.ensure_embedding_model(encoder.model_name, encoder.dimension)
        return encoder

    def row(self, item: MemoryItem, vector: np.ndarray | None) -> dict[str, Any]:
        """Read and encode the memory's file: the media vector, and the description's vector (a
        perceptual memory embeds in its write: ``vector`` is given)."""
        assert vector is not None
        row = super().row(item, vector)
        modality = self._modality(item)
        metadata = dict(row["metadata"].obj)
        row.update(modality=modality, text_embedding=vector, text_model=self.embedder.model_name)
        file_path = metadata.get("file_path")
        if file_path:
            path, data = read_media(str(file_path))
            if modality == "text":
                check_text(path, data)
            metadata.update(file_path=str(path), file_hash=file_hash(data), file_size=len(data))
            encoder = self.encoder(modality)
            if encoder is not None:
                row.update(embedding=encoder.encode_file(str(path)), model=encoder.model_name)
        row["metadata"] = Jsonb(metadata)
        return row

    def vectors_for_update(self, vector: np.ndarray | None) -> dict[str, Any]:
        """A new description changes the text vector only; the media vector stays."""
        model = None if vector is None else self.embedder.model_name
        return {"embedding": None, "model": None, "text_embedding": vector, "text_model": model}
