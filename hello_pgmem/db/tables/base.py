"""What every table definition shares: the metadata, and the columns several tables have."""

from __future__ import annotations

from sqlalchemy import (
    Column,
    DateTime,
    Integer,
    MetaData,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, REGCONFIG, TSVECTOR

metadata = MetaData()

MEMORY_TYPES = ("episodic", "semantic", "perceptual")

EXPIRES = (
    "When a LangGraph store item expires (its ttl after its last put, or its last read that "
    "refreshed it); NULL: never. Expired items are forgotten by the store's sweep or by maintain."
)
FINGERPRINT = (
    "The fingerprint of the text the vector was made of (vector_fingerprint: sha256 of the text, a "
    "chunk's after its heading path), written with the vector: hello-pgmem check finds a vector "
    "that is not of its row's text. NULL without a vector, for a perceptual memory's, and for "
    "vectors written before revision 0006 or on a Citus cluster."
)


def _now(comment: str | None = None) -> Column[object]:
    return Column(
        "created_at", DateTime(timezone=True), nullable=False, server_default=text("now()"), comment=comment
    )


def _updated() -> Column[object]:
    return Column("updated_at", DateTime(timezone=True), nullable=False, server_default=text("now()"))


def _metadata_column() -> Column[object]:
    return Column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb"))


def _text_columns() -> list[Column[object]]:
    """The full-text columns a trigger writes: configuration, lexemes, length."""
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
