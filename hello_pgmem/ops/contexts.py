"""The context windows of memories stored before revision 0004, made after the migration.

Revision 0004 marks every user with live memories ``contexts_ready = false``; ``hello-pgmem migrate``
then makes their windows here, user by user, in batches of :data:`BATCH` memories, each batch a
transaction of its own under the user's write lock (``fill_memory_contexts``), so that writers wait
for one batch at most. Interrupted, it starts again where it stopped at the next migrate: a user is
ready only once its last batch is made. Until then that user's searches read the windows from
``memories`` (sql/search.sql), and rank the same.
"""

from __future__ import annotations

from collections.abc import Callable

from hello_pgmem.core.settings import Settings
from hello_pgmem.db import Database

BATCH = 5000
WAITING = """
SELECT t.user_id, (SELECT count(*) FROM memories m WHERE m.user_id = t.user_id AND m.forgotten_at IS NULL)
FROM memory_text_totals t WHERE NOT t.contexts_ready ORDER BY t.user_id
"""
FILL = "SELECT filled, last_id, done FROM fill_memory_contexts(%(user_id)s, %(after)s, %(batch)s)"

Progress = Callable[[int, int], None]
"""``progress(made, total)``: the windows made so far, of all the migration makes."""


def fill_contexts(settings: Settings, progress: Progress | None = None, batch: int = BATCH) -> int:
    """Make the windows of every user not yet ready; how many windows were made."""
    with Database(settings) as db:
        if db.citus:  # a cluster keeps no windows: its searches read them from memories
            return 0
        with db.transaction(all_rows=True) as conn:
            waiting = [(str(r[0]), int(r[1])) for r in conn.execute(WAITING).fetchall()]
        total = sum(count for _, count in waiting)
        made = 0
        for user_id, _ in waiting:
            after = None
            done = False
            while not done:
                with db.transaction(user_id) as conn:
                    row = conn.execute(FILL, {"user_id": user_id, "after": after, "batch": batch}).fetchone()
                assert row is not None
                filled, after, done = int(row[0]), row[1], bool(row[2])
                made += filled
                if progress is not None:
                    progress(made, total)
    return made
