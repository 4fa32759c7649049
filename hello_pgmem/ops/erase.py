"""Right to erasure: everything of one user, in one transaction, with counts.

Memories of every type and session, the graph and its AGE vertices, the access log, the rows
waiting in the embedding queue, what the retrieval log holds of the user (memory searches and
the RAG questions the user asked), the user's tokens, and the user's own namespace
(``user:<user>``: its documents, chunks and cached embeddings). Other namespaces are shared:
their documents stay, and the result names those the user's tokens could use.
"""

from __future__ import annotations

from hello_pgmem import embedding_queue
from hello_pgmem import memory as table
from hello_pgmem.access import personal_namespace
from hello_pgmem.db import Database
from hello_pgmem.db.retrieval_log import erase_log
from hello_pgmem.graph.projection import AgeProjection
from hello_pgmem.graph.store import GraphStore
from hello_pgmem.rag import store as documents

ERASE_TOKENS = "SELECT tokens, namespaces FROM erase_user_tokens()"
ERASE_STATISTICS = "SELECT memory_totals, chunk_totals FROM erase_statistics()"


def erase_user(db: Database, user_id: str) -> dict[str, int]:
    """Delete every row of ``user_id`` in every table, and their AGE vertices; rows per table,
    and under ``left_namespaces`` the shared namespaces whose documents stay (see
    :func:`erase_report`)."""
    return erase_report(db, user_id)[0]


def erase_report(db: Database, user_id: str) -> tuple[dict[str, int], list[str]]:
    """Erase ``user_id``: the rows per table, and the shared namespaces its tokens could use, whose
    documents are left in place."""
    projection = AgeProjection(db.settings.graph_name) if db.graph_enabled else None
    graph = GraphStore(user_id, projection)
    own = personal_namespace(user_id)
    with db.transaction(user_id, namespace=own) as conn:
        mentions, relations = graph.link_counts(conn)  # they go with the memories and entities
        counts = {
            "retrieval_log": erase_log(conn, user_id),
            "memory_embedding_queue": embedding_queue.queued_rows(conn, "memory", user_id),
            "chunk_embedding_queue": embedding_queue.queued_rows(conn, "chunk", own),
            **table.erase_user(conn, user_id),
            "entities": graph.clear(conn),
            "mentions": mentions,
            "relations": relations,
        }
        row = conn.execute(ERASE_TOKENS).fetchone()
        counts["access_tokens"], left = (int(row[0]), list(row[1])) if row else (0, [])
        counts.update(documents.erase_namespace(conn, own))
        totals = conn.execute(ERASE_STATISTICS).fetchone()
        counts["memory_text_totals"], counts["chunk_text_totals"] = (
            (int(totals[0]), int(totals[1])) if totals else (0, 0)
        )
    names = (
        "memories",
        "working_memories",
        "entities",
        "mentions",
        "relations",
        "retrieval_log",
        "memory_accesses",
        "memory_embedding_queue",
        "memory_text_totals",
        "access_tokens",
        "documents",
        "chunks",
        "chunk_embedding_queue",
        "chunk_text_totals",
        "embedding_cache",
    )
    return {name: counts[name] for name in names}, [n for n in left if n != own]
