"""Table definitions (SQLAlchemy Core). Alembic revisions own the DDL; a test keeps the two equal.

The tables are defined without a schema: the configured schema (``pgmem`` by default) is
applied with ``schema_translate_map`` and every connection's ``search_path``.

Long-term memories (episodic, semantic, perceptual) share one table with a type column rather
than one table or partition per type: a memory changes type in place when it is consolidated
(it keeps its id), searches routinely span types in one ranked query, and the partial HNSW
indexes are per embedding model, not per type. Scale-out is by ``user_id``, which leads the
primary key and every B-tree index (HNSW and GIN indexes cannot lead with a scalar column).
"""

from __future__ import annotations

from pgvector.sqlalchemy import VECTOR
from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    Double,
    ForeignKey,
    ForeignKeyConstraint,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, REGCONFIG, TSVECTOR, UUID

metadata = MetaData()

MEMORY_TYPES = ("episodic", "semantic", "perceptual")
MODALITIES = ("text", "image", "audio", "video")


def _now(comment: str | None = None) -> Column[object]:
    return Column(
        "created_at", DateTime(timezone=True), nullable=False, server_default=text("now()"), comment=comment
    )


def _updated() -> Column[object]:
    return Column("updated_at", DateTime(timezone=True), nullable=False, server_default=text("now()"))


def _metadata_column() -> Column[object]:
    return Column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb"))


def _text_columns() -> list[Column[object]]:
    """The full-text columns a trigger writes (revision 0009): configuration, lexemes, length."""
    return [
        Column(
            "text_config",
            REGCONFIG,
            nullable=False,
            comment="The text search configuration of the content (text_config_for unless given).",
        ),
        Column(
            "lexemes",
            TSVECTOR,
            nullable=False,
            comment="The lexemes of the content under text_config: the lexical branch of search.",
        ),
        Column(
            "term_count",
            Integer,
            nullable=False,
            server_default=text("0"),
            comment="How many terms the lexemes hold (BM25 document length).",
        ),
    ]


embedding_models = Table(
    "embedding_models",
    metadata,
    Column("model", Text, primary_key=True),
    Column("dimension", Integer, nullable=False),
    Column("index_suffix", Text, nullable=False, unique=True),
    _now(),
    CheckConstraint("dimension BETWEEN 1 AND 4000", name="embedding_models_dimension_range"),
    CheckConstraint("btrim(model) <> '' AND length(model) <= 200", name="embedding_models_model_name"),
    comment="Embedding models in use; each has a partial HNSW index per vector table.",
)

memories = Table(
    "memories",
    metadata,
    Column("user_id", Text, nullable=False),
    Column("id", UUID(as_uuid=True), nullable=False),
    Column("memory_type", Text, nullable=False),
    Column("content", Text, nullable=False),
    Column("importance", Double, nullable=False, server_default=text("0.5")),
    Column("session_id", Text),
    Column("modality", Text),
    _metadata_column(),
    _now("When what the memory records happened (given on add; the insertion time by default)."),
    _updated(),
    Column("last_accessed_at", DateTime(timezone=True)),
    Column("access_count", Integer, nullable=False, server_default=text("0")),
    Column("forgotten_at", DateTime(timezone=True)),
    Column("embedding", VECTOR()),
    Column("embedding_model", Text, ForeignKey("embedding_models.model")),
    # revision 0002: the text space of perceptual memories (their description, any modality)
    Column("text_embedding", VECTOR()),
    Column("text_embedding_model", Text, ForeignKey("embedding_models.model")),
    *_text_columns(),  # revision 0009
    Column(
        "recorded_at",
        DateTime(timezone=True),
        nullable=False,
        server_default=text("now()"),
        comment="When the memory was stored.",
    ),
    Column(  # revision 0019
        "seq",
        BigInteger,
        nullable=False,
        server_default=text("nextval('memories_seq'::regclass)"),
        comment="The order the memory was added in (memories_seq; a batch's rows in their order): "
        "a session's memories with equal created_at are ordered by it.",
    ),
    PrimaryKeyConstraint("user_id", "id", name="memories_pkey"),
    CheckConstraint("btrim(user_id) <> '' AND length(user_id) <= 255", name="memories_user_id"),
    CheckConstraint(f"memory_type IN {MEMORY_TYPES!r}", name="memories_memory_type"),
    CheckConstraint("btrim(content) <> ''", name="memories_content_not_blank"),
    CheckConstraint("importance >= 0 AND importance <= 1", name="memories_importance_range"),
    CheckConstraint(f"modality IS NULL OR modality IN {MODALITIES!r}", name="memories_modality"),
    CheckConstraint("jsonb_typeof(metadata) = 'object'", name="memories_metadata_object"),
    CheckConstraint("access_count >= 0", name="memories_access_count"),
    CheckConstraint("(embedding IS NULL) = (embedding_model IS NULL)", name="memories_embedding_model"),
    CheckConstraint(
        "(text_embedding IS NULL) = (text_embedding_model IS NULL)", name="memories_text_embedding_model"
    ),
    Index("memories_user_type_created", "user_id", "memory_type", "created_at"),
    Index("memories_user_session_order", "user_id", "session_id", "created_at", "seq"),
    Index(
        "memories_user_lexemes",
        "user_id",
        "lexemes",
        postgresql_using="gin",
        postgresql_where=text("forgotten_at IS NULL"),
        postgresql_with={"fastupdate": "off"},
    ),
    comment="Long-term memories (episodic, semantic, perceptual) with their embeddings.",
)

working_memories = Table(
    "working_memories",
    metadata,
    Column("user_id", Text, nullable=False),
    Column("id", UUID(as_uuid=True), nullable=False),
    Column("session_id", Text),
    Column("content", Text, nullable=False),
    Column("importance", Double, nullable=False, server_default=text("0.5")),
    _metadata_column(),
    Column("token_count", Integer, nullable=False),
    _now(),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("user_id", "id", name="working_memories_pkey"),
    CheckConstraint("btrim(user_id) <> '' AND length(user_id) <= 255", name="working_memories_user_id"),
    CheckConstraint("btrim(content) <> ''", name="working_memories_content_not_blank"),
    CheckConstraint("importance >= 0 AND importance <= 1", name="working_memories_importance_range"),
    CheckConstraint("jsonb_typeof(metadata) = 'object'", name="working_memories_metadata_object"),
    CheckConstraint("token_count >= 0", name="working_memories_token_count"),
    CheckConstraint("expires_at > created_at", name="working_memories_expiry"),
    Index("working_memories_user_expires", "user_id", "expires_at"),
    Index("working_memories_user_session", "user_id", "session_id", "created_at"),
    prefixes=["UNLOGGED"],
    comment="Working memory: volatile by design (UNLOGGED), every row expires.",
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
        postgresql_with={"fastupdate": "off"},
    ),
    comment="RAG chunks of documents, with heading path, character span and embedding.",
)

memory_accesses = Table(
    "memory_accesses",
    metadata,
    Column("user_id", Text, nullable=False),
    Column("memory_id", UUID(as_uuid=True), nullable=False),
    Column("accessed_at", DateTime(timezone=True), nullable=False),
    Index("memory_accesses_user", "user_id"),
    prefixes=["UNLOGGED"],
    comment="Memories returned by searches and not yet folded into memories.access_count "
    "(fold_accesses); UNLOGGED: a crash loses these counts, never a memory.",
)

memory_text_totals = Table(
    "memory_text_totals",
    metadata,
    Column("user_id", Text, primary_key=True),
    Column("memories", BigInteger, nullable=False, server_default=text("0")),
    Column("terms", BigInteger, nullable=False, server_default=text("0")),
    comment="Per user: how many memories (live or forgotten) and how many terms they hold, kept by "
    "triggers; BM25 reads the average length and the number of documents here.",
)

memory_term_counts = Table(
    "memory_term_counts",
    metadata,
    Column("user_id", Text, primary_key=True),
    Column("lexeme", Text, primary_key=True),
    Column("memories", Integer, nullable=False),
    comment="Per user and lexeme: how many of the user's live (not forgotten) memories hold it, kept by "
    "triggers; the document frequencies of the hybrid search's BM25.",
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

entities = Table(
    "entities",
    metadata,
    Column("user_id", Text, nullable=False),
    Column("id", UUID(as_uuid=True), nullable=False),
    Column("name", Text, nullable=False),
    Column("name_norm", Text, nullable=False),
    Column("entity_type", Text, nullable=False, server_default=text("'MISC'")),
    Column("properties", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    _now(),
    _updated(),
    PrimaryKeyConstraint("user_id", "id", name="entities_pkey"),
    UniqueConstraint("user_id", "name_norm", name="entities_user_name"),
    CheckConstraint("btrim(name) <> ''", name="entities_name_not_blank"),
    CheckConstraint("jsonb_typeof(properties) = 'object'", name="entities_properties_object"),
    comment="Knowledge-graph entities, one per user and normalised name.",
)

mentions = Table(
    "mentions",
    metadata,
    Column("user_id", Text, nullable=False),
    Column("memory_id", UUID(as_uuid=True), nullable=False),
    Column("entity_id", UUID(as_uuid=True), nullable=False),
    _now(),
    PrimaryKeyConstraint("user_id", "memory_id", "entity_id", name="mentions_pkey"),
    ForeignKeyConstraint(
        ["user_id", "memory_id"],
        ["memories.user_id", "memories.id"],
        ondelete="CASCADE",
        name="mentions_memory_fkey",
    ),
    ForeignKeyConstraint(
        ["user_id", "entity_id"],
        ["entities.user_id", "entities.id"],
        ondelete="CASCADE",
        name="mentions_entity_fkey",
    ),
    Index("mentions_user_entity_recent", "user_id", "entity_id", text("created_at DESC"), "memory_id"),
    comment="Which memory mentions which entity.",
)

relations = Table(
    "relations",
    metadata,
    Column("user_id", Text, nullable=False),
    Column("source_id", UUID(as_uuid=True), nullable=False),
    Column("relation_type", Text, nullable=False),
    Column("target_id", UUID(as_uuid=True), nullable=False),
    Column("memory_id", UUID(as_uuid=True), nullable=False),
    Column("weight", Double, nullable=False, server_default=text("1.0")),
    _now(),
    _updated(),
    PrimaryKeyConstraint(
        "user_id", "source_id", "relation_type", "target_id", "memory_id", name="relations_pkey"
    ),
    ForeignKeyConstraint(
        ["user_id", "source_id"],
        ["entities.user_id", "entities.id"],
        ondelete="CASCADE",
        name="relations_source_fkey",
    ),
    ForeignKeyConstraint(
        ["user_id", "target_id"],
        ["entities.user_id", "entities.id"],
        ondelete="CASCADE",
        name="relations_target_fkey",
    ),
    ForeignKeyConstraint(
        ["user_id", "memory_id"],
        ["memories.user_id", "memories.id"],
        ondelete="CASCADE",
        name="relations_memory_fkey",
    ),
    CheckConstraint("btrim(relation_type) <> ''", name="relations_type_not_blank"),
    CheckConstraint("weight > 0", name="relations_weight_positive"),
    Index("relations_user_source_weight", "user_id", "source_id", text("weight DESC")),
    Index("relations_user_target_weight", "user_id", "target_id", text("weight DESC")),
    Index("relations_user_memory", "user_id", "memory_id"),
    comment="Typed, weighted relations between entities, one row per asserting memory.",
)

retrieval_log = Table(
    "retrieval_log",
    metadata,
    Column("user_id", Text, nullable=False),
    Column("id", BigInteger, Identity(always=True), nullable=False),
    Column("logged_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
    Column("kind", Text, nullable=False),
    Column("query", Text, nullable=False),
    Column("namespace", Text),
    Column(
        "results",
        JSONB,
        nullable=False,
        server_default=text("'[]'::jsonb"),
        comment='The results in rank order: [{"id": ..., "score": ...}, ...].',
    ),
    Column("latency_ms", Double, nullable=False),
    PrimaryKeyConstraint("user_id", "id", name="retrieval_log_pkey"),
    CheckConstraint("kind IN ('memory', 'rag')", name="retrieval_log_kind"),
    Index("retrieval_log_user_time", "user_id", "logged_at"),
    comment=(
        "What was searched, by whom, which memories or chunks came back with which scores, and how long "
        "it took. Written only when PGMEM_RETRIEVAL_LOG=on; rows older than PGMEM_RETRIEVAL_LOG_DAYS are "
        "purged by hello-pgmem maintain. A RAG search is logged under the user who asked when the "
        "knowledge base knows one (the MCP server, a tool given user_id), else as 'rag:<namespace>'."
    ),
)

access_tokens = Table(
    "access_tokens",
    metadata,
    Column("user_id", Text, nullable=False),
    Column("id", UUID(as_uuid=True), nullable=False, server_default=text("gen_random_uuid()")),
    Column("token_hash", LargeBinary, nullable=False),
    Column("namespaces", ARRAY(Text), nullable=False, server_default=text("'{}'::text[]")),
    Column("label", Text),
    _now(),
    Column("expires_at", DateTime(timezone=True)),
    Column("revoked_at", DateTime(timezone=True)),
    Column("last_used_at", DateTime(timezone=True)),
    Column(
        "mode",
        Text,
        nullable=False,
        server_default=text("'write'::text"),
        comment="read, write or admin: for the user's memory and the namespaces namespace_modes "
        "does not name.",
    ),
    Column(
        "namespace_modes",
        JSONB,
        nullable=False,
        server_default=text("'{}'::jsonb"),
        comment="A mode per namespace, where it differs from mode.",
    ),
    PrimaryKeyConstraint("user_id", "id", name="access_tokens_pkey"),
    CheckConstraint("btrim(user_id) <> '' AND length(user_id) <= 255", name="access_tokens_user_id"),
    CheckConstraint("length(token_hash) = 32", name="access_tokens_hash"),
    CheckConstraint("label IS NULL OR length(label) <= 200", name="access_tokens_label"),
    Index("access_tokens_hash", "token_hash", unique=True),
    comment="Bearer tokens of the MCP server: the SHA-256 of each token, its user and the namespaces it may "
    "use; hello-pgmem token create|list|revoke manages them.",
)
