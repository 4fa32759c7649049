"""search_memories of this checkout against another revision's, on one database, question by question.

    .venv/bin/python -m bench.search_ab --against ef58b7d --scenario 10x1k
    .venv/bin/python -m bench.search_ab --against ef58b7d --scenario 1x1000k --database URL

The database is a scenario of bench/multiuser.py: loaded fresh (and dropped after), or one that
`multiuser.py --keep` left (`--database`, migrated to this checkout first). The other revision's
sql/ranking.sql and sql/search.sql are created in a schema of its own, whose functions find everything else (tables,
the other files' functions) in the database's schema as this checkout made it: what is compared is the search functions alone. Both
are called with the same arguments (multiuser.py's questions and hashing embedder, ten episodic
memories, the fusion --fusion names, every other argument at its default), on one connection, warm, which goes first
alternating question by question. Reports each one's p50 and p95, their ratio and how many
questions get the same ten ids; writes bench/results/search-ab-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import time
from pathlib import Path
from typing import Any

from pgvector.psycopg import register_vector
from psycopg import sql

from bench import harness
from bench.scenarios import loaded, questions, users_of
from hello_pgmem import Database, HashingEmbedder

RESULTS = Path(__file__).resolve().parent / "results"
SIDE = "pgmem_ab"
"""The schema that holds the other revision's search functions while they are timed."""
CALL = "SELECT id FROM {}.search_memories(%s, %s, %s, %s, 10, {}, p_fusion => %s, p_vector_weight => %s)"
"""Ten episodic memories: the filter is a memory_filter where the revision takes one (p_filter), else
the types alone."""
TAKES_FILTER = """
SELECT 'p_filter' = ANY (p.proargnames) FROM pg_proc p
WHERE p.proname = 'search_memories' AND p.pronamespace = %s::regnamespace
"""
FUSION_WEIGHTS = {"weighted": 0.2, "spread": 0.5}
"""The vector weight each fusion has by default (ranking_weights()), given to both revisions: one
before the weights were named took it as an argument."""
WARM = 20


WEIGHTS_OF_BOTH = """
ALTER FUNCTION {side}.ranking_weights() RENAME TO ranking_weights_of_revision;
CREATE FUNCTION {side}.ranking_weights() RETURNS TABLE (name text, value double precision, meaning text)
LANGUAGE sql IMMUTABLE AS $$
    SELECT * FROM {side}.ranking_weights_of_revision()
    UNION ALL
    SELECT * FROM {own}.ranking_weights() w
    WHERE w.name NOT IN (SELECT r.name FROM {side}.ranking_weights_of_revision() r)
$$
"""
"""The other revision's weights, and this checkout's that it lacks: the functions of this checkout's
schema it calls (a context window's reads) find theirs."""


def install(db: Database, revision: str) -> None:
    """Create ``revision``'s sql/ranking.sql (where it has one) and sql/search.sql in the side
    schema, over the database's own schema."""
    script = "\n".join(
        subprocess.run(["git", "show", f"{revision}:sql/{name}"], capture_output=True, text=True).stdout
        for name in ("ranking.sql", "search.sql")
    )
    with db.connection() as conn:
        vector_schema = conn.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
            " WHERE e.extname = 'vector'"
        ).fetchone()
        assert vector_schema is not None, "pgvector is not installed"
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(SIDE)))
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(SIDE)))
        conn.execute(
            sql.SQL("SET LOCAL search_path = {}, {}, {}").format(
                sql.Identifier(SIDE),
                sql.Identifier(db.settings.schema_name),
                sql.Identifier(vector_schema[0]),
            )
        )
        conn.execute("SET LOCAL check_function_bodies = off")
        conn.execute(script)  # type: ignore[call-overload]  # a script of a revision of this repository
        conn.execute(
            sql.SQL(WEIGHTS_OF_BOTH).format(side=sql.Identifier(SIDE), own=sql.Identifier(db.settings.schema_name))
        )
        conn.commit()


def alternate(db: Database, asked: list[tuple[str, str]], fusion: str) -> dict[str, Any]:
    """Both versions on every question, alternating which goes first: milliseconds and ids."""
    embedder = HashingEmbedder()
    schemas = (db.settings.schema_name, SIDE)
    times: dict[str, list[float]] = {schema: [] for schema in schemas}
    same = 0
    with db.connection() as conn:
        register_vector(conn)
        conn.commit()
        calls = {}
        for schema in schemas:
            takes = conn.execute(TAKES_FILTER, (schema,)).fetchone()
            episodic = "memory_filter(ARRAY['episodic'])" if takes and takes[0] else "ARRAY['episodic']"
            calls[schema] = sql.SQL(CALL).format(sql.Identifier(schema), sql.SQL(episodic))
        for number, (user, question) in enumerate(asked):
            vector = embedder.encode_query(question)
            found = {}
            for schema in schemas if number % 2 else reversed(schemas):
                started = time.perf_counter()
                found[schema] = conn.execute(
                    calls[schema],
                    (user, embedder.model_name, vector, question, fusion, FUSION_WEIGHTS[fusion]),
                ).fetchall()
                conn.commit()
                if number >= WARM:
                    times[schema].append((time.perf_counter() - started) * 1000)
            same += number >= WARM and found[schemas[0]] == found[schemas[1]]
    this, other = (harness.percentiles(times[schema]) for schema in schemas)
    return {
        "this": this,
        "against": other,
        "p50_ratio": this["p50"] / other["p50"],
        "same_ids": same / len(times[schemas[0]]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--against", required=True, help="a git revision whose sql/search.sql is compared")
    parser.add_argument("--scenario", default="10x1k", help="a scenario of bench/multiuser.py")
    parser.add_argument("--database", help="a database multiuser.py --keep left for that scenario")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--fusion",
        default="weighted",
        help="p_fusion of both calls: the hashing embedder's weighted, or spread",
    )
    args = parser.parse_args()
    users = users_of(args.scenario)
    with loaded(args.scenario, args.database, keep=False) as (db, _):
        install(db, args.against)
        try:
            result = alternate(db, questions(list(users), args.queries + WARM, seed=len(users)), args.fusion)
        finally:
            with db.connection() as conn:
                conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(SIDE)))
                conn.commit()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], check=True, capture_output=True, text=True)
    report = {
        "machine": harness.machine(),
        "scenario": args.scenario,
        "this": head.stdout.strip(),
        "against": args.against,
        "fusion": args.fusion,
        **result,
    }
    print(
        f"{args.scenario}, {args.fusion}: search_memories p50 {result['this']['p50']:.2f} ms (p95 {result['this']['p95']:.2f})"
        f" against {args.against} {result['against']['p50']:.2f} ms (p95 {result['against']['p95']:.2f}):"
        f" {result['p50_ratio']:.2f}x; same ten ids on {result['same_ids']:.0%} of the questions"
    )
    RESULTS.mkdir(exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M")
    (RESULTS / f"search-ab-{stamp}.json").write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
