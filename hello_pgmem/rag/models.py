"""Typed results of the RAG pipeline."""

from __future__ import annotations

from uuid import UUID

from pydantic import BaseModel


class ChunkHit(BaseModel):
    """One chunk found by a search, with each score component."""

    id: UUID
    document_id: str
    position: int
    content: str
    heading_path: list[str]
    start_char: int
    end_char: int
    source_path: str | None
    vector_score: float
    text_score: float
    score: float
    matched_by: list[str] = []  # the query variants (original, mqe, hyde) that found it


class IngestResult(BaseModel):
    """What happened to one document."""

    document_id: str
    source_path: str | None
    status: str  # added | replaced | unchanged | skipped (neither text nor a known format) | failed
    chunks: int = 0
    tokens: int = 0
    embedded: int = 0  # chunks that needed the embedding model (not in the cache), embedded in the write
    queued: int = 0  # chunks stored without their vector: the embedding workers make it
    elapsed_ms: int = 0
    error: str | None = None


class KnowledgeStats(BaseModel):
    namespace: str
    documents: int
    chunks: int
    tokens: int
    last_ingest: str | None
    embedding_model: str
    dimension: int
    pending_embeddings: int = 0  # chunks that still wait for their vector


class DocumentInfo(BaseModel):
    id: str
    source_path: str | None
    title: str | None
    chunks: int
    tokens: int
    updated_at: str
