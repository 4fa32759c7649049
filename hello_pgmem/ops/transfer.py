"""Export and import one user's memories, graph and embeddings as JSON Lines.

The first line is a header; then one object per record, with ``"kind"`` one of memory, working,
entity, mention, relation. Vectors travel as lists with their model name; a memory still waiting
for its vector says so (``queued``, ``queued_model``) and waits again once imported. Import validates every
line before writing anything, then writes everything in one transaction; a record whose id exists
is left as it is, so importing twice changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from psycopg.types.json import Jsonb
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from hello_pgmem import memory as table
from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import check_user_id, utcnow
from hello_pgmem.db import Conn, Database

FORMAT = "hello-pgmem-export"
VERSION = 1

EXPORTS: dict[str, str] = {
    "memory": """SELECT m.id, m.memory_type, m.content, m.importance, m.session_id, m.modality, m.metadata,
                        m.created_at, m.updated_at, m.last_accessed_at, m.access_count, m.forgotten_at,
                        m.embedding::text, m.embedding_model, m.text_embedding::text, m.text_embedding_model,
                        m.recorded_at, m.valid_to, m.superseded_at, m.version_of,
                        q.memory_id IS NOT NULL, q.model
                 FROM memories m
                 LEFT JOIN memory_embedding_queue q ON q.user_id = m.user_id AND q.memory_id = m.id
                 WHERE m.user_id = %(user_id)s ORDER BY m.created_at, m.seq""",
    "working": """SELECT id, session_id, content, importance, metadata, token_count, created_at, expires_at
                  FROM working_memories WHERE user_id = %(user_id)s ORDER BY created_at, id""",
    "entity": """SELECT id, name, name_norm, entity_type, properties, created_at, updated_at
                 FROM entities WHERE user_id = %(user_id)s ORDER BY id""",
    "mention": "SELECT memory_id, entity_id, created_at FROM mentions WHERE user_id = %(user_id)s",
    "relation": """SELECT source_id, relation_type, target_id, memory_id, weight, created_at, updated_at,
                          valid_from, valid_to, recorded_at, superseded_at, single_valued
                   FROM relations WHERE user_id = %(user_id)s""",
}
FIELDS: dict[str, tuple[str, ...]] = {
    "memory": (
        "id",
        "memory_type",
        "content",
        "importance",
        "session_id",
        "modality",
        "metadata",
        "created_at",
        "updated_at",
        "last_accessed_at",
        "access_count",
        "forgotten_at",
        "embedding",
        "embedding_model",
        "text_embedding",
        "text_embedding_model",
        "recorded_at",
        "valid_to",
        "superseded_at",
        "version_of",
        "queued",
        "queued_model",
    ),
    "working": (
        "id",
        "session_id",
        "content",
        "importance",
        "metadata",
        "token_count",
        "created_at",
        "expires_at",
    ),
    "entity": ("id", "name", "name_norm", "entity_type", "properties", "created_at", "updated_at"),
    "mention": ("memory_id", "entity_id", "created_at"),
    "relation": (
        "source_id",
        "relation_type",
        "target_id",
        "memory_id",
        "weight",
        "created_at",
        "updated_at",
        "valid_from",
        "valid_to",
        "recorded_at",
        "superseded_at",
        "single_valued",
    ),
}


class Header(BaseModel):
    model_config = ConfigDict(extra="allow")
    format: Literal["hello-pgmem-export"]
    version: Literal[1]
    user_id: str


class MemoryRecord(BaseModel):
    kind: Literal["memory"]
    id: UUID
    memory_type: Literal["episodic", "semantic", "perceptual"]
    content: str = Field(min_length=1)
    importance: float = Field(ge=0, le=1, allow_inf_nan=False)
    session_id: str | None = None
    modality: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime | None = None
    access_count: int = Field(default=0, ge=0)
    forgotten_at: datetime | None = None
    embedding: list[float] | None = None
    embedding_model: str | None = None
    text_embedding: list[float] | None = None
    text_embedding_model: str | None = None
    # the two clocks (docs/temporal.md); a file written before them has neither
    recorded_at: datetime | None = None
    valid_to: datetime | None = None
    superseded_at: datetime | None = None
    version_of: UUID | None = None
    # waiting in the embedding queue, for this model (None: any worker's)
    queued: bool = False
    queued_model: str | None = None


class WorkingRecord(BaseModel):
    kind: Literal["working"]
    id: UUID
    session_id: str | None = None
    content: str = Field(min_length=1)
    importance: float = Field(ge=0, le=1, allow_inf_nan=False)
    metadata: dict[str, Any] = Field(default_factory=dict)
    token_count: int = Field(ge=0)
    created_at: datetime
    expires_at: datetime


class EntityRecord(BaseModel):
    kind: Literal["entity"]
    id: UUID
    name: str = Field(min_length=1)
    name_norm: str = Field(min_length=1)
    entity_type: str
    properties: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime


class MentionRecord(BaseModel):
    kind: Literal["mention"]
    memory_id: UUID
    entity_id: UUID
    created_at: datetime


class RelationRecord(BaseModel):
    kind: Literal["relation"]
    source_id: UUID
    relation_type: str = Field(min_length=1)
    target_id: UUID
    memory_id: UUID
    weight: float = Field(gt=0)
    created_at: datetime
    updated_at: datetime
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    recorded_at: datetime | None = None
    superseded_at: datetime | None = None
    single_valued: bool = False


RECORDS: dict[str, type[BaseModel]] = {
    "memory": MemoryRecord,
    "working": WorkingRecord,
    "entity": EntityRecord,
    "mention": MentionRecord,
    "relation": RelationRecord,
}
INSERTS = {
    "memory": """INSERT INTO memories (user_id, id, memory_type, content, importance, session_id, modality,
                   metadata, created_at, updated_at, last_accessed_at, access_count, forgotten_at, embedding,
                   embedding_model, text_embedding, text_embedding_model, recorded_at, valid_to,
                   superseded_at, version_of)
                 VALUES (%(user_id)s, %(id)s, %(memory_type)s, %(content)s, %(importance)s, %(session_id)s,
                   %(modality)s, %(metadata)s, %(created_at)s, %(updated_at)s, %(last_accessed_at)s,
                   %(access_count)s, %(forgotten_at)s, %(embedding)s::vector, %(embedding_model)s,
                   %(text_embedding)s::vector, %(text_embedding_model)s, %(recorded_at)s,
                   %(valid_to)s, %(superseded_at)s, %(version_of)s)
                 ON CONFLICT (user_id, id) DO NOTHING""",
    "queued": """UPDATE memory_embedding_queue SET model = %(queued_model)s
                 WHERE user_id = %(user_id)s AND memory_id = %(id)s""",
    "working": """INSERT INTO working_memories (user_id, id, session_id, content, importance, metadata,
                    token_count, created_at, expires_at)
                  VALUES (%(user_id)s, %(id)s, %(session_id)s, %(content)s, %(importance)s, %(metadata)s,
                    %(token_count)s, %(created_at)s, %(expires_at)s)
                  ON CONFLICT (user_id, id) DO NOTHING""",
    "entity": """INSERT INTO entities (user_id, id, name, name_norm, entity_type, properties, created_at, updated_at)
                 VALUES (%(user_id)s, %(id)s, %(name)s, %(name_norm)s, %(entity_type)s, %(properties)s,
                   %(created_at)s, %(updated_at)s)
                 ON CONFLICT DO NOTHING""",
    "mention": """INSERT INTO mentions (user_id, memory_id, entity_id, created_at)
                  VALUES (%(user_id)s, %(memory_id)s, %(entity_id)s, %(created_at)s) ON CONFLICT DO NOTHING""",
    "relation": """INSERT INTO relations (user_id, source_id, relation_type, target_id, memory_id, weight,
                     created_at, updated_at, valid_from, valid_to, recorded_at, superseded_at, single_valued)
                   VALUES (%(user_id)s, %(source_id)s, %(relation_type)s, %(target_id)s, %(memory_id)s,
                     %(weight)s, %(created_at)s, %(updated_at)s, coalesce(%(valid_from)s, %(created_at)s),
                     %(valid_to)s, %(recorded_at)s, %(superseded_at)s, %(single_valued)s)
                   ON CONFLICT DO NOTHING""",
}


def _json(value: Any) -> Any:
    if isinstance(value, UUID | datetime):
        return value.isoformat() if isinstance(value, datetime) else str(value)
    return value


def export_user(db: Database, user_id: str) -> Iterator[str]:
    """The JSON Lines of one user's data (header first)."""
    check_user_id(user_id)
    yield json.dumps(
        {"format": FORMAT, "version": VERSION, "user_id": user_id, "exported_at": utcnow().isoformat()},
        ensure_ascii=False,
    )
    with db.transaction(user_id) as conn:
        table.fold_accesses(conn, user_id)  # the access counts, up to date
        for kind, query in EXPORTS.items():
            for row in conn.execute(query, {"user_id": user_id}):
                record = {"kind": kind, **{name: _json(v) for name, v in zip(FIELDS[kind], row, strict=True)}}
                for vector in ("embedding", "text_embedding"):
                    if record.get(vector) is not None:
                        record[vector] = json.loads(record[vector])
                yield json.dumps(record, ensure_ascii=False)


def parse(lines: Iterable[str]) -> tuple[Header, list[BaseModel]]:
    """Validate every line; a InvalidInputError names the first bad line and field."""
    header: Header | None = None
    records: list[BaseModel] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if header is None:
                header = Header.model_validate(data)
                continue
            kind = data.get("kind") if isinstance(data, dict) else None
            if kind not in RECORDS:
                raise InvalidInputError(f"line {number}", f"kind must be one of {', '.join(RECORDS)}")
            records.append(RECORDS[kind].model_validate(data))
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"line {number}", f"is not JSON: {exc.msg}") from exc
        except PydanticValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise InvalidInputError(f"line {number}.{field}", str(first["msg"])) from exc
    if header is None:
        raise InvalidInputError("line 1", "must be the hello-pgmem-export header")
    return header, records


REGISTERED = "SELECT model, dimension FROM embedding_models WHERE model = ANY(%(models)s)"


def _target(header: Header, user_id: str | None, as_user: str | None) -> str:
    """The user an import writes into: ``as_user``, else the file's, which must be ``user_id``."""
    if as_user is not None:
        return check_user_id(as_user)
    if user_id is not None and check_user_id(user_id) != header.user_id:
        raise InvalidInputError(
            "user_id",
            f"the file holds user {header.user_id!r}, not {user_id!r}: name that user, or import it "
            f"as {user_id!r} on purpose (--as-user)",
        )
    return check_user_id(header.user_id)


def _vector_models(records: Sequence[BaseModel]) -> dict[str, int]:
    """The embedding models of the records' vectors, with their dimension (one each)."""
    models: dict[str, int] = {}
    for record in records:
        if not isinstance(record, MemoryRecord):
            continue
        for vector, model in (
            (record.embedding, record.embedding_model),
            (record.text_embedding, record.text_embedding_model),
        ):
            if (vector is None) != (model is None):
                raise InvalidInputError("embedding", f"memory {record.id}: a vector needs its model and back")
            if (
                vector is not None
                and model is not None
                and models.setdefault(model, len(vector)) != len(vector)
            ):
                raise InvalidInputError("embedding", f"model {model!r} has vectors of two dimensions")
    return models


def _check_registered(conn: Conn, models: dict[str, int]) -> None:
    """Refuse a model this database has not registered with this dimension: an import registers
    none (each model adds three HNSW indexes; the schema owner registers models)."""
    registered = dict(conn.execute(REGISTERED, {"models": list(models)}).fetchall()) if models else {}
    for model, dimension in models.items():
        if registered.get(model) != dimension:
            known = (
                f"registered with {registered[model]} dimensions" if model in registered else "not registered"
            )
            raise InvalidInputError(
                "embedding_model",
                f"model {model!r} ({dimension} dimensions) is {known} in this database: an import "
                "registers no model (the schema owner does, by using it once)",
            )


def import_user(
    db: Database, lines: Iterable[str], user_id: str | None = None, *, as_user: str | None = None
) -> dict[str, int]:
    """Validate everything, then write everything in one transaction; counts of new rows per kind.

    The rows go to the user the file's header names, which must be ``user_id`` when given; with
    ``as_user`` they go to that user instead, whoever the file names. Vectors must be of models
    this database has registered, with their dimension: an import registers none (each model
    would add three HNSW indexes; the schema owner registers models)."""
    header, records = parse(lines)
    user_id = _target(header, user_id, as_user)
    models = _vector_models(records)
    counts = dict.fromkeys(RECORDS, 0)
    with db.transaction(user_id) as conn:
        _check_registered(conn, models)
        # a file written before the two clocks: its rows are recorded now (as the server sees it)
        row = conn.execute("SELECT now()").fetchone()
        assert row is not None
        now = row[0]
        for kind in RECORDS:  # memories and entities before what refers to them
            for record in (r for r in records if r.model_dump()["kind"] == kind):
                values = record.model_dump()
                if "recorded_at" in values and values["recorded_at"] is None:
                    values["recorded_at"] = now
                for key in ("metadata", "properties"):
                    if key in values:
                        values[key] = Jsonb(values[key])
                for column in ("embedding", "text_embedding"):
                    if values.get(column) is not None:
                        values[column] = str(values[column])
                written = conn.execute(INSERTS[kind], {**values, "user_id": user_id}).rowcount
                counts[kind] += written
                if written and values.get("queued_model"):  # queued again by the insert, for its model
                    conn.execute(INSERTS["queued"], {**values, "user_id": user_id})
    if db.graph_enabled and (counts["entity"] or counts["memory"]):
        from hello_pgmem.ops.rebuild import rebuild_graph

        rebuild_graph(db, user_id)
    return counts
