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
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from hello_pgmem.errors import ValidationError
from hello_pgmem.memory.longterm import LongTermMemory
from hello_pgmem.models import MemoryItem, MemoryType
from hello_pgmem.perceptual.encoders import MediaEncoder, file_hash, infer_modality, read_media

INSERT = """
INSERT INTO memories (user_id, id, memory_type, content, importance, session_id, modality,
                      metadata, created_at, embedding, embedding_model, text_embedding,
                      text_embedding_model)
VALUES (%(user_id)s, %(id)s, 'perceptual', %(content)s, %(importance)s, %(session_id)s,
        %(modality)s, %(metadata)s, %(created_at)s, %(embedding)s, %(model)s,
        %(text_embedding)s, %(text_model)s)
"""

SEARCH = """
SELECT id, memory_type, content, importance, NULL::text AS session_id, modality, metadata,
       created_at, vector_score, recency_score, importance_weight, score
FROM search_perceptual(%(user_id)s, %(model)s, %(query)s, %(limit)s, %(modality)s, %(since)s,
                       %(until)s, %(min_importance)s, %(now)s, %(space)s)
"""

UPDATE_TEXT = """
UPDATE memories SET text_embedding = %(text_embedding)s, text_embedding_model = %(text_model)s
WHERE user_id = %(user_id)s AND id = %(id)s
"""


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
        modality = item.metadata.get("modality") or (infer_modality(file_path) if file_path else "text")
        if modality not in self.modalities:
            raise ValidationError(
                "modality", f"must be one of {', '.join(self.modalities)}, got {modality!r}"
            )
        if modality in ("image", "audio") and not file_path:
            raise ValidationError("file_path", f"a {modality} memory needs the file it describes")
        return str(modality)

    def add_many(self, items: Sequence[MemoryItem], prepared: Sequence[Any] | None = None) -> list[UUID]:
        """Read and encode each file, then store every memory with both vectors in one transaction."""
        if not items:
            return []
        text_vectors = self.embedder.encode([item.content for item in items])
        rows = []
        for item, text_vector in zip(items, text_vectors, strict=True):
            if item.user_id != self.user_id:
                raise ValidationError("user_id", f"must be {self.user_id!r}, the owner of this memory")
            modality = self._modality(item)
            metadata = {k: v for k, v in item.metadata.items() if k not in ("session_id", "modality")}
            vector, model = text_vector, self.embedder.model_name
            file_path = metadata.get("file_path")
            if file_path:
                path, data = read_media(str(file_path))
                metadata.update(file_path=str(path), file_hash=file_hash(data), file_size=len(data))
                encoder = self.encoders.get(modality)
                if encoder is not None:
                    vector, model = encoder.encode_file(str(path)), encoder.model_name
                    self.db.ensure_embedding_model(model, encoder.dimension)
            rows.append(
                {
                    "user_id": self.user_id,
                    "id": item.id,
                    "content": item.content,
                    "importance": item.importance,
                    "session_id": item.metadata.get("session_id"),
                    "modality": modality,
                    "metadata": Jsonb(metadata),
                    "created_at": item.timestamp,
                    "embedding": vector,
                    "model": model,
                    "text_embedding": text_vector,
                    "text_model": self.embedder.model_name,
                }
            )
        self.db.ensure_embedding_model(self.embedder.model_name, self.embedder.dimension)
        with self.db.transaction(self.user_id) as conn, conn.cursor() as cur:
            cur.executemany(INSERT, rows)
        return [item.id for item in items]

    def update(
        self,
        memory_id: UUID,
        content: str | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> bool:
        """A new description changes the text vector only; the media vector stays."""
        params = {
            "user_id": self.user_id,
            "id": memory_id,
            "content": content,
            "importance": importance,
            "metadata": Jsonb(metadata or {}),
            "embedding": None,
            "model": None,
        }
        from hello_pgmem.memory.longterm import UPDATE

        with self.db.transaction(self.user_id) as conn:
            found = conn.execute(UPDATE, params).fetchone() is not None
            if found and content is not None:
                conn.execute(
                    UPDATE_TEXT,
                    {
                        "user_id": self.user_id,
                        "id": memory_id,
                        "text_embedding": self.embedder.encode_one(content),
                        "text_model": self.embedder.model_name,
                    },
                )
        return found

    def retrieve(
        self,
        query: str,
        limit: int = 5,
        *,
        target_modality: str | None = None,
        query_modality: str = "text",
        since: datetime | None = None,
        until: datetime | None = None,
        min_importance: float | None = None,
    ) -> list[MemoryItem]:
        """Text queries search every modality through descriptions; a file query its own space."""
        if target_modality is not None and target_modality not in self.modalities:
            raise ValidationError("target_modality", f"must be one of {', '.join(self.modalities)}")
        common = {"limit": limit, "since": since, "until": until, "min_importance": min_importance}
        if query_modality == "text":
            return self._ranked(
                SEARCH,
                query,
                ("vector_score", "recency_score"),
                modality=target_modality,
                space="text_embedding",
                **common,
            )
        encoder = self.encoders.get(query_modality)
        if encoder is None:
            raise ValidationError("query_modality", f"must be text or one of {', '.join(self.encoders)}")
        if target_modality not in (None, query_modality):
            raise ValidationError(
                "target_modality",
                f"a {query_modality} query finds {query_modality} memories; "
                "search other modalities with a text query",
            )
        self.db.ensure_embedding_model(encoder.model_name, encoder.dimension)
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
            rows = conn.execute(SEARCH, params).fetchall()
        return [self._scored(row, ("vector_score", "recency_score")) for row in rows]
