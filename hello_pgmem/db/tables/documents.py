"""Tables of the knowledge base: documents, their chunks and term totals, and the embedding cache."""

from __future__ import annotations

from pgvector.sqlalchemy import VECTOR
from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, UUID

from hello_pgmem.db.tables.base import (
    FINGERPRINT,
    _metadata_column,
    _now,
    _text_columns,
    _updated,
    metadata,
)

documents = Table(
    "documents",
    metadata,
    Column("namespace", Text, nullable=False),
    Column("id", Text, nullable=False),
    Column("source_path", Text),
    Column("title", Text),
    Column("content_hash", LargeBinary, nullable=False),
    Column("token_count", Integer, nullable=False, server_default=text("0")),
    Column("chunk_count", Integer, nullable=False, server_default=text("0")),
    _metadata_column(),
    _now(),
    _updated(),
    PrimaryKeyConstraint("namespace", "id", name="documents_pkey"),
    CheckConstraint("btrim(namespace) <> '' AND length(namespace) <= 255", name="documents_namespace"),
    CheckConstraint("btrim(id) <> '' AND length(id) <= 255", name="documents_id"),
    CheckConstraint("jsonb_typeof(metadata) = 'object'", name="documents_metadata_object"),
    comment="RAG documents, one row per ingested source, grouped by namespace.",
)

chunks = Table(
    "chunks",
    metadata,
    Column("namespace", Text, nullable=False),
    Column("id", UUID(as_uuid=True), nullable=False),
    Column("document_id", Text, nullable=False),
    Column("position", Integer, nullable=False),
    Column("content", Text, nullable=False),
    Column("content_hash", LargeBinary, nullable=False),
    Column("heading_path", ARRAY(Text), nullable=False, server_default=text("'{}'::text[]")),
    Column("start_char", Integer, nullable=False),
    Column("end_char", Integer, nullable=False),
    Column("token_count", Integer, nullable=False),
    Column("embedding", VECTOR()),
    Column("embedding_model", Text, ForeignKey("embedding_models.model")),
    *_text_columns(),
    Column("embedded_hash", LargeBinary, comment=FINGERPRINT),
    PrimaryKeyConstraint("namespace", "id", name="chunks_pkey"),
    ForeignKeyConstraint(
        ["namespace", "document_id"],
        ["documents.namespace", "documents.id"],
        ondelete="CASCADE",
        name="chunks_document_fkey",
    ),
    UniqueConstraint("namespace", "document_id", "position", name="chunks_document_position"),
    CheckConstraint("position >= 0", name="chunks_position"),
    CheckConstraint("start_char >= 0 AND end_char >= start_char", name="chunks_span"),
    CheckConstraint("token_count >= 0", name="chunks_token_count"),
    CheckConstraint("(embedding IS NULL) = (embedding_model IS NULL)", name="chunks_embedding_model"),
    Index(
        "chunks_namespace_lexemes",
        "namespace",
        "lexemes",
        postgresql_using="gin",
        postgresql_with={"fastupdate": "on", "gin_pending_list_limit": "64"},
    ),
    # rows stay whole up to a page (a chunk's text, vector and lexemes), so a search
    # reads each candidate's vector from its row instead of from the TOAST table
    postgresql_with={"toast_tuple_target": "8160"},
    comment="RAG chunks of documents, with heading path, character span and embedding.",
)

chunk_text_totals = Table(
    "chunk_text_totals",
    metadata,
    Column("namespace", Text, primary_key=True),
    Column("chunks", BigInteger, nullable=False, server_default=text("0")),
    Column("terms", BigInteger, nullable=False, server_default=text("0")),
    comment="Per namespace: how many chunks and terms, kept by triggers, for BM25 over chunks.",
)

embedding_cache = Table(
    "embedding_cache",
    metadata,
    Column("model", Text, ForeignKey("embedding_models.model", ondelete="CASCADE"), nullable=False),
    Column("content_hash", LargeBinary, nullable=False),
    Column("embedding", VECTOR(), nullable=False),
    _now(),
    PrimaryKeyConstraint("model", "content_hash", name="embedding_cache_pkey"),
    comment="Embeddings keyed by (model, sha256 of the embedded text); holds no text.",
)
