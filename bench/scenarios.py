"""The multi-user scenarios of bench/multiuser.py, for every script that times searches on them:
users named by a scenario (``10x1k``), a scenario's database (bulk-loaded, or one kept before), the
questions asked (held-out memories), and the queries a pgvector user writes by hand, timed as an
application runs them."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench.harness import fresh_database, percentiles
from bench.loads import bulk_load
from bench.workload import Workload
from hello_pgmem import Database, HashingEmbedder, Settings
from hello_pgmem.ops import migrate

K = 10


PLAIN = """
SELECT id FROM memories
WHERE user_id = %(user)s AND embedding_model = %(model)s AND forgotten_at IS NULL
ORDER BY embedding::vector(384) <=> %(q)s::vector(384)
LIMIT %(k)s
"""


PLAIN_ROWS = """
SELECT id, memory_type, content, importance, session_id, modality, metadata, created_at,
       1 - (embedding::vector(384) <=> %(q)s::vector(384)) AS cosine
FROM memories
WHERE user_id = %(user)s AND embedding_model = %(model)s AND forgotten_at IS NULL
ORDER BY embedding::vector(384) <=> %(q)s::vector(384)
LIMIT %(k)s
"""
"""The plain kNN returning what ``retrieve_memories`` returns of each memory (its fields and a
score), where ``PLAIN`` returns ids."""


HAND_HYBRID = """
WITH semantic AS (
    SELECT id, rank() OVER (ORDER BY embedding::vector(384) <=> %(q)s::vector(384)) AS rank
    FROM memories
    WHERE user_id = %(user)s AND embedding_model = %(model)s AND forgotten_at IS NULL
    ORDER BY embedding::vector(384) <=> %(q)s::vector(384)
    LIMIT 40
), keyword AS (
    SELECT m.id, rank() OVER (ORDER BY ts_rank_cd(m.bench_tsv, q.query) DESC) AS rank
    FROM memories m,
         (SELECT to_tsquery('english', string_agg(quote_literal(lexeme), ' | ')) AS query
          FROM unnest(to_tsvector('english', %(text)s))) AS q
    WHERE m.user_id = %(user)s AND m.bench_tsv @@ q.query AND m.forgotten_at IS NULL
    ORDER BY ts_rank_cd(m.bench_tsv, q.query) DESC
    LIMIT 40
)
SELECT coalesce(semantic.id, keyword.id) AS id,
       coalesce(1.0 / (60 + semantic.rank), 0.0) + coalesce(1.0 / (60 + keyword.rank), 0.0) AS score
FROM semantic FULL OUTER JOIN keyword ON semantic.id = keyword.id
ORDER BY score DESC
LIMIT %(k)s
"""
"""The hybrid SQL a pgvector user writes by hand (pgvector-python's hybrid search example, per
user): the HNSW top 40 by cosine and the full-text top 40 by ts_rank_cd (English, any word of the
query) over a generated tsvector column with a GIN index, fused by reciprocal rank (k = 60)."""


# The column is added to the empty table (added later, it would rewrite the table and rebuild its
# HNSW index), its GIN index after the load.
HAND_HYBRID_COLUMN = (
    "ALTER TABLE memories ADD COLUMN bench_tsv tsvector"
    " GENERATED ALWAYS AS (to_tsvector('english', content)) STORED"
)


HAND_HYBRID_INDEX = (
    "CREATE INDEX memories_bench_tsv ON memories USING gin (user_id, bench_tsv)",
    "ANALYZE memories",
)


BY_HAND = {
    "plain pgvector": PLAIN,
    "plain pgvector, whole rows": PLAIN_ROWS,
    "hand-written hybrid": HAND_HYBRID,
}
"""The queries a pgvector user writes by hand, each timed bare and in its own transaction."""


SCOPED = """
SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('pgmem.user_id', %(user)s, true)
"""
"""A hand-written query's own transaction: its scan, and the user's row-level-security scope, as
the API's transactions set them (one statement)."""


def questions(users: list[str], count: int, seed: int) -> list[tuple[str, str]]:
    """(user, question) pairs: held-out memories of the workload, users taken at random."""
    work, pick = Workload(10_000 + seed), random.Random(seed)
    return [(pick.choice(users), work.memory()) for _ in range(count)]


def by_hand(
    db: Database,
    embedder: HashingEmbedder,
    asked: list[tuple[str, str]],
    statement: str = PLAIN,
    own_transaction: bool = False,
) -> dict[str, Any]:
    """A query a pgvector user would write (the plain kNN, or the hand-written hybrid), with the
    query's embedding timed as the API's is: one statement each on a connection whose settings
    are made once, or, with ``own_transaction``, as an application that scopes each request runs
    it: BEGIN, its scan and the user's row-level-security scope (``SCOPED``), the query, COMMIT
    (four round trips through psycopg)."""
    latencies, returned = [], []
    with db.connection() as conn:
        if not own_transaction:
            conn.execute("SET hnsw.iterative_scan = relaxed_order")
        conn.execute("SET hnsw.ef_search = 40")
        conn.commit()
        for run, pairs in (("warm-up", asked[:20]), ("measured", asked)):
            for user, question in pairs:
                started = time.perf_counter()
                params = {
                    "user": user,
                    "model": embedder.model_name,
                    "q": embedder.encode_query(question),
                    "k": K,
                    "text": question,
                }
                if own_transaction:
                    with conn.transaction():
                        conn.execute(SCOPED, {"user": user})
                        rows = conn.execute(statement, params).fetchall()
                else:
                    rows = conn.execute(statement, params).fetchall()
                if run == "measured":
                    latencies.append((time.perf_counter() - started) * 1000)
                    returned.append(len(rows))
        conn.rollback()
    return {"latency_ms": percentiles(latencies), "rows_min": min(returned)}


def users_of(name: str) -> dict[str, int]:
    """The users of a scenario named ``<users>x<memories each>`` (``10x1k``, ``1x1000k``)."""
    users_count, per_user = (
        int(part.rstrip("k")) * (1000 if part.endswith("k") else 1) for part in name.split("x")
    )
    return {f"user{u:03d}": per_user for u in range(users_count)}


@contextmanager
def loaded(name: str, database: str | None, keep: bool) -> Iterator[tuple[Database, dict[str, Any] | None]]:
    """The scenario's database and its load: bulk-loaded into a fresh one, or one a ``--keep`` run
    left (``database``), migrated to this checkout, whose load is not timed again."""
    if database is not None:
        settings = Settings(database_url=database, pool_max_size=4)
        migrate.upgrade(settings)
        with Database(settings) as db:
            yield db, None
        return
    with fresh_database(keep=keep, pool_max_size=4) as settings, Database(settings) as db:
        with db.connection() as conn:
            conn.execute(HAND_HYBRID_COLUMN)
            conn.commit()
        load = bulk_load(db, HashingEmbedder(), users_of(name))
        with db.connection() as conn:
            for statement in HAND_HYBRID_INDEX:
                conn.execute(statement)
            conn.commit()
        if keep:
            print(f"{name}: kept {settings.database_url}", flush=True)
        yield db, load
