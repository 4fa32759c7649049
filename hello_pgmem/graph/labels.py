"""The AGE labels of the memory graph and the indexes AGE 1.5 does not create by itself.

Vertices ``Entity {user_id, id, name, type}`` and ``Memory {user_id, id}``; edges
``MENTIONS {user_id}`` (memory -> entity) and ``RELATED {user_id, type, memory_id}``
(entity -> entity). Each label table gets a GIN index on ``properties`` (map patterns such as
``{user_id: $u, id: $id}`` compile to ``properties @> ...`` and use it), a unique B-tree on vertex
ids and B-trees on edge endpoints, which AGE creates itself only from 1.7.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

VERTEX_LABELS = ("Entity", "Memory")
EDGE_LABELS = ("MENTIONS", "RELATED")

_GRAPH_EXISTS = text("SELECT 1 FROM ag_catalog.ag_graph WHERE name = CAST(:graph AS name)")
_LABEL_EXISTS = text(
    "SELECT 1 FROM ag_catalog.ag_label l JOIN ag_catalog.ag_graph g ON g.graphid = l.graph "
    "WHERE g.name = CAST(:graph AS name) AND l.name = CAST(:label AS name)"
)


def graph_exists(conn: Connection, graph: str) -> bool:
    installed = conn.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'age'")).scalar()
    return bool(installed) and bool(conn.execute(_GRAPH_EXISTS, {"graph": graph}).scalar())


def create_labels(conn: Connection, graph: str) -> None:
    """Create the labels and their indexes when the graph exists (idempotent)."""
    if not graph_exists(conn, graph):
        return
    quote = conn.dialect.identifier_preparer.quote_identifier
    for label in (*VERTEX_LABELS, *EDGE_LABELS):
        if not conn.execute(_LABEL_EXISTS, {"graph": graph, "label": label}).scalar():
            creator = "create_vlabel" if label in VERTEX_LABELS else "create_elabel"
            conn.execute(
                text(f"SELECT ag_catalog.{creator}(CAST(:graph AS name), CAST(:label AS name))"),
                {"graph": graph, "label": label},
            )
        table = f"{quote(graph)}.{quote(label)}"
        statements = [
            f"CREATE INDEX IF NOT EXISTS {quote(label + '_properties')} ON {table} USING gin (properties)"
        ]
        if label in VERTEX_LABELS:
            statements.append(f"CREATE UNIQUE INDEX IF NOT EXISTS {quote(label + '_id')} ON {table} (id)")
        else:
            statements.append(f"CREATE INDEX IF NOT EXISTS {quote(label + '_start')} ON {table} (start_id)")
            statements.append(f"CREATE INDEX IF NOT EXISTS {quote(label + '_end')} ON {table} (end_id)")
        for statement in statements:
            conn.exec_driver_sql(statement)


def drop_labels(conn: Connection, graph: str) -> None:
    """Drop the labels (and everything in them) when the graph exists."""
    if not graph_exists(conn, graph):
        return
    for label in (*EDGE_LABELS, *VERTEX_LABELS):
        if conn.execute(_LABEL_EXISTS, {"graph": graph, "label": label}).scalar():
            conn.execute(
                text("SELECT ag_catalog.drop_label(CAST(:graph AS name), CAST(:label AS name), false)"),
                {"graph": graph, "label": label},
            )
