"""Perceptual memory: images, audio and other media, with a text description.

Each memory has two vectors: its media vector in the space of its modality's encoder (one model,
hence one partial HNSW index, per modality), and the text vector of its description, so a text
query finds media of any modality ("cross-modal search through the text descriptions"). A text
memory's media vector is its text vector. Scored ``(vec × 0.8 + recency × 0.2) × importance
weight`` with recency ``max(0.1, exp(-0.1 × age_hours / 24))``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import MemoryItem, MemoryType, Scoring
from hello_pgmem.memory import ranked_queries as rq
from hello_pgmem.memory.longterm import LongTermMemory
from hello_pgmem.memory.rows import memory_rows
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

    def _encoder(self, modality: str) -> MediaEncoder | None:
        encoder = self.encoders.get(modality)
        if encoder is not None:
            self.db.ensure_embedding_model(encoder.model_name, encoder.dimension)
        return encoder

    def row(self, item: MemoryItem, vector: np.ndarray) -> dict[str, Any]:
        """Read and encode the memory's file: the media vector, and the description's vector."""
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
            encoder = self._encoder(modality)
            if encoder is not None:
                row.update(embedding=encoder.encode_file(str(path)), model=encoder.model_name)
        row["metadata"] = Jsonb(metadata)
        return row

    def vectors_for_update(self, vector: np.ndarray | None) -> dict[str, Any]:
        """A new description changes the text vector only; the media vector stays."""
        model = None if vector is None else self.embedder.model_name
        return {"embedding": None, "model": None, "text_embedding": vector, "text_model": model}

    def retrieve(
        self,
        query: str,
        limit: int = 5,
        *,
        vector: np.ndarray | None = None,
        target_modality: str | None = None,
        query_modality: str = "text",
        since: datetime | None = None,
        until: datetime | None = None,
        min_importance: float | None = None,
        scoring: Scoring | None = None,
    ) -> list[MemoryItem]:
        """Text queries search every modality through descriptions (hybrid by default, or the
        reference's scoring); a file query searches its own modality's space by the reference's."""
        if target_modality is not None and target_modality not in self.modalities:
            raise InvalidInputError("target_modality", f"must be one of {', '.join(self.modalities)}")
        common = {"limit": limit, "since": since, "until": until, "min_importance": min_importance}
        if query_modality == "text" and not self.uses_reference(scoring):
            filters: dict[str, Any] = {"since": since, "until": until, "min_importance": min_importance}
            space = "text_embedding"
            return self.search(
                query, limit, vector=vector, scoring=scoring, space=space, modality=target_modality, **filters
            )
        if query_modality == "text":
            return self.ranked(
                rq.SEARCH_PERCEPTUAL,
                query,
                vector,
                modality=target_modality,
                space="text_embedding",
                **common,
            )
        encoder = self._encoder(query_modality)
        if encoder is None:
            raise InvalidInputError("query_modality", f"must be text or one of {', '.join(self.encoders)}")
        if target_modality not in (None, query_modality):
            raise InvalidInputError(
                "target_modality",
                f"a {query_modality} query finds {query_modality} memories; "
                "search other modalities with a text query",
            )
        params = {
            **common,
            "user_id": self.user_id,
            "model": encoder.model_name,
            "query": encoder.encode_file(query),
            "modality": query_modality,
            "now": self.clock(),
            "space": "embedding",
        }
        with self.db.transaction(self.user_id) as conn:
            cursor = conn.cursor(row_factory=memory_rows(self.user_id))
            return cursor.execute(rq.SEARCH_PERCEPTUAL, params).fetchall()
