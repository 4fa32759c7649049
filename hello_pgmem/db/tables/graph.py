"""Tables of the knowledge graph: entities, the memories that mention them, and relations."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Double,
    ForeignKeyConstraint,
    Index,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID, ExcludeConstraint

from hello_pgmem.db.tables.base import (
    _now,
    _updated,
    metadata,
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
    # the two clocks
    Column(
        "valid_from",
        DateTime(timezone=True),
        nullable=False,
        server_default=text("now()"),
        comment="When the relation began to hold (its memory's time).",
    ),
    Column("valid_to", DateTime(timezone=True), comment="When it stopped holding (NULL: it still holds)."),
    Column(
        "recorded_at",
        DateTime(timezone=True),
        nullable=False,
        server_default=text("now()"),
        comment="When the store learned it.",
    ),
    Column(
        "superseded_at",
        DateTime(timezone=True),
        comment="When the store stopped believing it (NULL: still believed).",
    ),
    Column(
        "single_valued",
        Boolean,
        nullable=False,
        server_default=text("false"),
        comment="Its type holds one target at a time (relation_types).",
    ),
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
    CheckConstraint("valid_to IS NULL OR valid_to > valid_from", name="relations_valid_period"),
    CheckConstraint("superseded_at IS NULL OR superseded_at >= recorded_at", name="relations_known_period"),
    # a single-valued relation holds one target at a time for a subject, as far as the store knows
    ExcludeConstraint(
        ("user_id", "="),
        ("source_id", "="),
        ("relation_type", "="),
        ("target_id", "<>"),
        (text("tstzrange(valid_from, valid_to)"), "&&"),
        name="relations_one_target_at_a_time",
        using="gist",
        where=text("single_valued AND superseded_at IS NULL"),
    ),
    Index("relations_user_source_weight", "user_id", "source_id", text("weight DESC")),
    Index("relations_user_target_weight", "user_id", "target_id", text("weight DESC")),
    Index("relations_user_memory", "user_id", "memory_id"),
    comment="Typed, weighted relations between entities, one row per asserting memory.",
)


relation_types = Table(
    "relation_types",
    metadata,
    Column("relation_type", Text, primary_key=True),
    Column("single_valued", Boolean, nullable=False, server_default=text("false")),
    CheckConstraint("btrim(relation_type) <> ''", name="relation_types_not_blank"),
    comment="Relation types with a rule: single_valued ones hold one target at a time for a subject.",
)
