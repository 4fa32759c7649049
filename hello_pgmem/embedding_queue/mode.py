"""Whether a write embeds its texts itself or queues them for the workers: one decision for
memories and chunks alike (``PGMEM_EMBED``)."""

from __future__ import annotations

from hello_pgmem.db import Database
from hello_pgmem.embedding import Embedder


def embeds_in_write(db: Database, embedder: Embedder) -> bool:
    """``now``; ``auto`` with an embedder that takes microseconds in this process (the hashing
    one); always on a Citus cluster. Otherwise the write queues its rows for the workers."""
    mode = db.settings.embed
    return mode == "now" or (mode == "auto" and embedder.encodes_in_process) or db.citus
