"""The embedding queues: the memories and chunks whose vector a worker still has to make.

A write stores a row without its vector and a trigger queues it (sql/embedding_queue.sql); workers
claim queued rows (``FOR UPDATE SKIP LOCKED``, a lease in ``claimed_until``), embed them outside
any transaction and write the vectors back in short ones. ``generation`` grows with every new text
of the row, drawn from one sequence (``embedding_generations``) that outlives every queue row: a
vector is written only for the generation it was made from, so a row edited while its vector was
being made gets the vector of its new text, even when another hand embedded and dequeued the row
in between and the edit queued it again. A failed embedding stays queued with
its error, how often it failed, and when it is tried again.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKeyConstraint,
    Index,
    Integer,
    PrimaryKeyConstraint,
    Sequence,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import UUID

from hello_pgmem.db.tables.base import metadata

EMBEDDING_GENERATIONS = Sequence("embedding_generations", metadata=metadata)
"""Every queueing of a row, and every new text of a queued one, draws its generation here."""


def _queue_columns() -> list[Column[object]]:
    return [
        Column(
            "model",
            Text,
            comment="The embedding model the writer wanted (pgmem.embedding_model); NULL: any worker's.",
        ),
        Column(
            "generation",
            BigInteger,
            EMBEDDING_GENERATIONS,
            nullable=False,
            server_default=EMBEDDING_GENERATIONS.next_value(),
            comment="Drawn anew (embedding_generations) at every queueing of the row and every new text: "
            "a vector is written for the generation it was made from, and no generation comes twice.",
        ),
        Column("queued_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
        Column(
            "claimed_until",
            DateTime(timezone=True),
            comment="A worker's lease: the row is not claimed again before it ends (a dead worker's "
            "comes back).",
        ),
        Column(
            "attempts", Integer, nullable=False, server_default=text("0"), comment="Failed embeddings so far."
        ),
        Column(
            "retry_at",
            DateTime(timezone=True),
            nullable=False,
            server_default=text("now()"),
            comment="When the row may be claimed again (now, or after a failure's back-off).",
        ),
        Column("last_error", Text, comment="The last failure, as the embedder said it."),
    ]


def _queue(name: str, scope: str, key: str, rows: str, what: str) -> Table:
    """The queue of one table's rows (``rows``), by their scope (user or namespace) and id."""
    return Table(
        name,
        metadata,
        Column(scope, Text, nullable=False),
        Column(key, UUID(as_uuid=True), nullable=False),
        *_queue_columns(),
        PrimaryKeyConstraint(scope, key, name=f"{name}_pkey"),
        ForeignKeyConstraint(
            [scope, key], [f"{rows}.{scope}", f"{rows}.id"], ondelete="CASCADE", name=f"{name}_{what}_fkey"
        ),
        CheckConstraint("attempts >= 0 AND generation >= 1", name=f"{name}_counts"),
        Index(f"{name}_due", "retry_at", "queued_at"),
        comment=f"The {rows} whose vector is still to be made by an embedding worker.",
    )


memory_embedding_queue = _queue("memory_embedding_queue", "user_id", "memory_id", "memories", "memory")
chunk_embedding_queue = _queue("chunk_embedding_queue", "namespace", "chunk_id", "chunks", "chunk")
