"""The statements of re-embedding: the rows still on another model, their new vectors, and how
many remain, per vector column."""

from __future__ import annotations

from psycopg import sql

_TEXT_ROWS = {  # vector column -> the rows that hold a text vector in it
    "embedding": sql.SQL("(memory_type <> 'perceptual' OR modality IS NULL OR modality = 'text')"),
    "text_embedding": sql.SQL("memory_type = 'perceptual'"),
}
VECTOR_COLUMNS = tuple(_TEXT_ROWS)

_PENDING = """
SELECT user_id, id, content FROM memories
WHERE {rows} AND {model_column} IS DISTINCT FROM %(model)s
  AND (%(user_id)s::text IS NULL OR user_id = %(user_id)s)
ORDER BY user_id, id
LIMIT %(batch)s
"""

_REEMBED = """
UPDATE memories m
SET {column} = src.embedding, {model_column} = %(model)s, updated_at = now()
FROM unnest(%(users)s::text[], %(ids)s::uuid[], %(contents)s::text[], %(embeddings)s::vector[])
     AS src(user_id, id, content, embedding)
WHERE m.user_id = src.user_id AND m.id = src.id AND m.content = src.content
"""

_REMAINING = """
SELECT count(*) FROM memories
WHERE {rows} AND {model_column} IS DISTINCT FROM %(model)s
  AND (%(user_id)s::text IS NULL OR user_id = %(user_id)s)
"""


def reembed_statements(column: str) -> tuple[sql.Composed, sql.Composed, sql.Composed]:
    """The pending, write and remaining statements of re-embedding one vector column."""
    names = {
        "column": sql.Identifier(column),
        "model_column": sql.Identifier(f"{column}_model"),
        "rows": _TEXT_ROWS[column],
    }
    return tuple(sql.SQL(text).format(**names) for text in (_PENDING, _REEMBED, _REMAINING))  # type: ignore[return-value]
