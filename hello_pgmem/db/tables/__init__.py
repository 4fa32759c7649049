"""Table definitions (SQLAlchemy Core), one module per family; ``metadata`` holds them all. The
baseline revision creates the tables from it; a later revision changes a table here and in its
migration, and a test fails until the two agree (sql/README.md).

The tables are defined without a schema: the configured schema (``pgmem`` by default) is
applied with ``schema_translate_map`` and every connection's ``search_path``.

Long-term memories (episodic, semantic, perceptual) share one table with a type column rather
than one table or partition per type: a memory changes type in place when it is consolidated
(it keeps its id), searches routinely span types in one ranked query, and the partial HNSW
indexes are per embedding model, not per type. Scale-out is by ``user_id``, which leads the
primary key and every B-tree index (HNSW and GIN indexes cannot lead with a scalar column).
"""

from hello_pgmem.db.tables import changes, documents, graph, logs, memory, queue
from hello_pgmem.db.tables.base import metadata

__all__ = ["changes", "documents", "graph", "logs", "memory", "metadata", "queue"]
