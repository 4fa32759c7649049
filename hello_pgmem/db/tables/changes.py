"""What a transaction's writes change in the search statistics, staged until its commit.

Every statement on ``memories`` or ``chunks`` stages the rows it changed (their images, signed:
+1 as they are now, -1 as they were); one step at commit (``_apply_stat_changes``, a deferred
trigger on ``stat_changes_pending``) applies the transaction's changes to the BM25 statistics, the
sessions and the memories' context windows at once, under the writers' lock. So a long write holds
its user's lock for that last step alone (sql/statistics.sql). The tables are UNLOGGED and hold rows
only inside the transaction that staged them; only the schema owner's trigger functions touch them.
"""

from __future__ import annotations

from pgvector.sqlalchemy import VECTOR
from sqlalchemy import BigInteger, Boolean, Column, DateTime, Index, Integer, SmallInteger, Table, Text
from sqlalchemy.dialects.postgresql import TSVECTOR, UUID

from hello_pgmem.db.tables.base import metadata

memory_stat_changes = Table(
    "memory_stat_changes",
    metadata,
    Column("xact", BigInteger, nullable=False, comment="The staging transaction (pg_current_xact_id)."),
    Column("user_id", Text, nullable=False),
    Column("memory_id", UUID(as_uuid=True), nullable=False),
    Column("sign", SmallInteger, nullable=False, comment="+1: the row as it is now; -1: as it was."),
    Column("live", Boolean, nullable=False, comment="Not forgotten."),
    Column("session_id", Text),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("memory_type", Text, nullable=False),
    Column("term_count", Integer, nullable=False),
    Column("lexemes", TSVECTOR, nullable=False),
    Column("embedding", VECTOR()),
    Column("embedding_model", Text),
    Index("memory_stat_changes_xact", "xact"),
    prefixes=["UNLOGGED"],
    comment="Internal: memory rows changed by a transaction, applied to the statistics at its commit.",
)

chunk_stat_changes = Table(
    "chunk_stat_changes",
    metadata,
    Column("xact", BigInteger, nullable=False, comment="The staging transaction (pg_current_xact_id)."),
    Column("namespace", Text, nullable=False),
    Column("sign", SmallInteger, nullable=False, comment="+1: the row as it is now; -1: as it was."),
    Column("term_count", Integer, nullable=False),
    Index("chunk_stat_changes_xact", "xact"),
    prefixes=["UNLOGGED"],
    comment="Internal: chunk rows changed by a transaction, applied to the statistics at its commit.",
)

stat_changes_pending = Table(
    "stat_changes_pending",
    metadata,
    Column("xact", BigInteger, primary_key=True),
    prefixes=["UNLOGGED"],
    comment="Internal: one row per transaction with staged changes; its deferred trigger applies them.",
)
