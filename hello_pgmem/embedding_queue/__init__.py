"""Vectors made after the write: the embedding queue, its workers, and waiting for them.

A write stores its memories and chunks without vectors and a trigger queues them (when the
embedder is a model: ``PGMEM_EMBED``); workers (:class:`EmbeddingWorker`) make the vectors outside
any user's transaction: in the background of the process that wrote (:mod:`.background`), or in
``hello-pgmem worker`` processes. A row is found by its words the moment its write commits, by
meaning once its vector is there.
"""

from hello_pgmem.embedding_queue.background import queued
from hello_pgmem.embedding_queue.mode import embeds_in_write
from hello_pgmem.embedding_queue.waiting import (
    Pending,
    QueueStatus,
    Scope,
    ScopeQueue,
    catch_up,
    pending,
    pending_in,
    pending_query,
    queue_errors,
    queue_status,
    queued_rows,
    scope_queue,
    search_catch_up,
    wait_for_embeddings,
    waiting_for_search,
)
from hello_pgmem.embedding_queue.worker import EmbeddingWorker, Pass

__all__ = [
    "EmbeddingWorker",
    "Pass",
    "Pending",
    "QueueStatus",
    "Scope",
    "ScopeQueue",
    "catch_up",
    "embeds_in_write",
    "pending",
    "pending_in",
    "pending_query",
    "queue_errors",
    "queue_status",
    "queued",
    "queued_rows",
    "scope_queue",
    "search_catch_up",
    "wait_for_embeddings",
    "waiting_for_search",
]
