"""What the graph's row-level security costs: the Cypher passthrough as the read role against the
same Cypher run unscoped as the application role, and the library's semantic search and add with
the label tables' policies on and off.

    .venv/bin/python -m bench.graph_isolation [--memories 4000 40000] [--runs 200]

For each size, a deployment built the documented way (owner migrates, application role granted)
gets that many semantic memories with their graph for one user (and 1,000 for another, whose
rows the policies must hide), loaded as the application role. Writes bench/results/graph-isolation-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from bench.harness import machine, percentiles, role_deployment
from hello_pgmem import Database, HashingEmbedder, Settings
from hello_pgmem.db.age import cypher
from hello_pgmem.memory import MemoryManager

REPO = Path(__file__).resolve().parent.parent
PEOPLE = ("张三", "李四", "王五", "赵六", "Alice", "Bob", "Carol", "Dave")
PLACES = ("北京", "上海", "Berlin", "Paris", "阿里巴巴", "腾讯", "Acme", "Initech")
QUERIES = {
    "entity_by_name": ("MATCH (e:Entity {name: $name}) RETURN e.name", lambda i: {"name": PEOPLE[i % 8]}),
    "memories_of_entity": (
        "MATCH (m:Memory)-[:MENTIONS]->(e:Entity {name: $name}) RETURN count(m)",
        lambda i: {"name": PLACES[i % 8]},
    ),
    "two_hops": (
        "MATCH (a:Entity {name: $name})-[:RELATED]->(b)-[:RELATED]->(c) RETURN count(c)",
        lambda i: {"name": PEOPLE[i % 8]},
    ),
}


def timed(call: Callable[[int], object], runs: int) -> dict[str, float]:
    samples = []
    for i in range(runs):
        started = time.perf_counter()
        call(i)
        samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


def fact(j: int) -> str:
    return f"{PEOPLE[j % 8]}在{PLACES[(j * 3) % 8]}工作，认识{PEOPLE[(j * 5 + 1) % 8]} {j}"


def label_security(url: str, graph: str, on: bool) -> None:
    """Turn the label tables' row-level security on or off (as a superuser)."""
    with psycopg.connect(url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT c.relname FROM ag_catalog.ag_label l JOIN ag_catalog.ag_graph g ON g.graphid = l.graph "
            "JOIN pg_class c ON c.oid = l.relation WHERE g.name = %s",
            (graph,),
        ).fetchall()
        action = sql.SQL("ENABLE" if on else "DISABLE")
        for (table,) in tables:
            conn.execute(
                sql.SQL("ALTER TABLE {} {} ROW LEVEL SECURITY").format(sql.Identifier(graph, table), action)
            )


def measure(app: Settings, url: str, runs: int) -> dict[str, Any]:
    graph = app.graph_name
    embedder = HashingEmbedder()
    out: dict[str, Any] = {}
    with Database(app) as db:
        alice = MemoryManager(user_id="u0", database=db, embedder=embedder)
        for name, (query, params) in QUERIES.items():
            filtered = query.replace("{name", "{user_id: $user_id, name")

            def scoped(i: int, query: str = query, params: Any = params) -> object:
                return alice.cypher(query, params(i))

            def unscoped(i: int, query: str = filtered, params: Any = params) -> object:
                """The same query filtered by its text, as the passthrough ran before revision 0016."""
                with db.transaction("u0") as conn:
                    return cypher(conn, graph, query, {**params(i), "user_id": "u0"})

            scoped(0), unscoped(0)  # warm up
            out[f"passthrough_{name}_read_role"] = timed(scoped, runs)
            out[f"cypher_{name}_app_role_filtered_by_text"] = timed(unscoped, runs)
        for state in ("on", "off"):
            label_security(url, graph, state == "on")
            alice.retrieve_memories("warm up", memory_types=["semantic"])
            out[f"semantic_search_label_rls_{state}"] = timed(
                lambda i: alice.retrieve_memories(
                    f"{PEOPLE[i % 8]} {PLACES[i % 8]}", memory_types=["semantic"]
                ),
                runs,
            )
            out[f"semantic_add_label_rls_{state}"] = timed(
                lambda i: alice.add_memory(f"{fact(i)} {uuid.uuid4().hex[:6]}", "semantic", 0.5), runs // 2
            )
        label_security(url, graph, True)
    return out


def run_size(memories: int, runs: int) -> dict[str, Any]:
    with role_deployment("pgmem_bench_graph") as (superuser, app_settings):
        started = time.perf_counter()
        with Database(app_settings) as db:
            for user, count in (("u0", memories), ("u1", 1000)):  # u1: rows the policies must hide
                manager = MemoryManager(user_id=user, database=db, embedder=HashingEmbedder())
                for start in range(0, count, 500):
                    batch = [fact(j) for j in range(start, min(count, start + 500))]
                    manager.add_memories(batch, "semantic", 0.7)
        load_s = time.perf_counter() - started
        with psycopg.connect(superuser.database_url, autocommit=True) as conn:
            conn.execute("ANALYZE")
        return {
            "memories_per_user": memories,
            "load_seconds_as_app": round(load_s, 1),
            **measure(app_settings, superuser.database_url, runs),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, nargs="+", default=[4000, 40000])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "runs": args.runs,
        "sizes": [run_size(size, args.runs) for size in args.memories],
    }
    out = REPO / "bench" / "results" / f"graph-isolation-{datetime.now(UTC):%Y%m%d-%H%M}.json"
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
