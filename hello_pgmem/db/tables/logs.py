"""Tables of what the store records about its use: the retrieval log and the MCP access tokens."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    Double,
    Identity,
    Index,
    LargeBinary,
    PrimaryKeyConstraint,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID

from hello_pgmem.db.tables.base import (
    _now,
    metadata,
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
    CheckConstraint("mode IN ('read', 'write', 'admin')", name="access_tokens_mode"),
    CheckConstraint(
        "jsonb_typeof(namespace_modes) = 'object' AND NOT jsonb_path_exists(namespace_modes, "
        '\'$.* ? (@ != "read" && @ != "write" && @ != "admin")\')',
        name="access_tokens_namespace_modes",
    ),
    Index("access_tokens_hash", "token_hash", unique=True),
    comment="Bearer tokens of the MCP server: the SHA-256 of each token, its user and the namespaces it may "
    "use; hello-pgmem token create|list|revoke manages them.",
)
