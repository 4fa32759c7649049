"""Tables of memories: long-term and working memory, their access log and term counts, and the
embedding models their vectors use."""

from __future__ import annotations

from pgvector.sqlalchemy import VECTOR
from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    Sequence,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import TSVECTOR, UUID

from hello_pgmem.core.models import MODALITIES
from hello_pgmem.db.tables.base import (
    EXPIRES,
    FINGERPRINT,
    MEMORY_TYPES,
    _metadata_column,
    _now,
    _text_columns,
    _updated,
    metadata,
)

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

MEMORIES_SEQ = Sequence("memories_seq", metadata=metadata)
"""The order memories were added in (a batch's rows in their order)."""

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
    # the text space of perceptual memories (their description, any modality)
    Column("text_embedding", VECTOR()),
    Column("text_embedding_model", Text, ForeignKey("embedding_models.model")),
    *_text_columns(),
    Column(
        "recorded_at",
        DateTime(timezone=True),
        nullable=False,
        server_default=text("now()"),
        comment="When the memory was stored.",
    ),
    Column(
        "seq",
        BigInteger,
        MEMORIES_SEQ,
        nullable=False,
        server_default=MEMORIES_SEQ.next_value(),
        comment="The order the memory was added in (memories_seq; a batch's rows in their order): "
        "a session's memories with equal created_at are ordered by it.",
    ),
    Column(  # the two clocks
        "valid_to",
        DateTime(timezone=True),
        comment="When the fact stopped holding in the world (NULL: it still holds); it held from created_at.",
    ),
    Column(
        "superseded_at",
        DateTime(timezone=True),
        comment="When the store stopped believing this version (a correction or a later version); "
        "NULL: still believed.",
    ),
    Column(
        "version_of",
        UUID(as_uuid=True),
        comment="The memory this row is an earlier version of; "
        "NULL for a memory itself (its current version).",
    ),
    Column("embedded_hash", LargeBinary, comment=FINGERPRINT),
    Column("expires_at", DateTime(timezone=True), comment=EXPIRES),
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
    CheckConstraint("valid_to IS NULL OR valid_to > created_at", name="memories_valid_period"),
    CheckConstraint("superseded_at IS NULL OR superseded_at >= recorded_at", name="memories_known_period"),
    # an earlier version is never searched: it is kept forgotten
    CheckConstraint("version_of IS NULL OR forgotten_at IS NOT NULL", name="memories_version_retired"),
    Index("memories_user_type_created", "user_id", "memory_type", "created_at"),
    Index("memories_expiring", "expires_at", postgresql_where=text("expires_at IS NOT NULL")),
    Index("memories_user_session_order", "user_id", "session_id", "created_at", "seq"),
    Index(
        "memories_user_versions",
        "user_id",
        "version_of",
        postgresql_where=text("version_of IS NOT NULL"),
    ),
    Index(
        "memories_user_lexemes",
        "user_id",
        "lexemes",
        postgresql_using="gin",
        postgresql_where=text("forgotten_at IS NULL"),
        # new rows wait in a pending list of at most 64 kB, merged in bulk (the merge trigger)
        postgresql_with={"fastupdate": "on", "gin_pending_list_limit": "64"},
    ),
    # rows stay whole up to a page (a 384-d vector, its text and lexemes), so a
    # search reads each candidate's vector from its row instead of from the TOAST table
    postgresql_with={"toast_tuple_target": "8160"},
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
    Column("sessions", BigInteger, nullable=False, server_default=text("0")),
    Column("session_terms", BigInteger, nullable=False, server_default=text("0")),
    Column(
        "contexts_ready",
        Boolean,
        nullable=False,
        server_default=text("true"),
        comment="Whether memory_contexts holds every live memory's window (false while a migration "
        "fills them: a search then reads the windows from memories).",
    ),
    comment="Per user: how many live memories and how many terms they hold, and how many sessions "
    "with live memories and their terms, kept by triggers; BM25 reads the average lengths and the "
    "numbers of documents here.",
)

memory_contexts = Table(
    "memory_contexts",
    metadata,
    Column("user_id", Text, nullable=False),
    Column("memory_id", UUID(as_uuid=True), nullable=False),
    Column("memory_type", Text, nullable=False),
    Column(
        "lexemes",
        TSVECTOR,
        nullable=False,
        comment="The window's lexemes: the memory's and those of the two live memories before and "
        "the two after it in its session, by created_at and seq (the memory's alone without a session).",
    ),
    Column("length", Integer, nullable=False, comment="The window's terms (its members' term_count)."),
    PrimaryKeyConstraint("user_id", "memory_id", name="memory_contexts_pkey"),
    Index(
        "memory_contexts_user_lexemes",
        "user_id",
        "lexemes",
        postgresql_using="gin",
        postgresql_with={"fastupdate": "on", "gin_pending_list_limit": "256"},
    ),
    comment="Per live memory: its context window as one text, kept by triggers in the write's own "
    "transaction; the hybrid search finds candidates and reads the window's BM25 here, in a table "
    "of its own so that a neighbour's change never rewrites the memory's row (or its HNSW entry).",
)

memory_sessions = Table(
    "memory_sessions",
    metadata,
    Column("user_id", Text, primary_key=True),
    Column("session_id", Text, primary_key=True),
    Column("memories", Integer, nullable=False),
    Column("terms", BigInteger, nullable=False),
    Column("embedding_model", Text),
    Column("embedding_sum", VECTOR()),
    comment="Per user and session: its live long-term memories as one document (how many, their "
    "terms, the sum of their vectors of one model), kept by triggers; the whole-session ranking "
    "(search_sessions) and the session component of the hybrid search read it.",
)

session_terms = Table(
    "session_terms",
    metadata,
    Column("user_id", Text, primary_key=True),
    Column("lexeme", Text, primary_key=True),
    Column("session_id", Text, primary_key=True),
    Column("tf", Integer, nullable=False),
    comment="Per user, lexeme and session: how often the session's live memories hold it, kept by "
    "triggers; a session's term frequencies, and by counting, a lexeme's session frequency.",
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
