"""The web view's pages, timed, and its screenshots.

    .venv/bin/python -m bench.ui                         # 10,000 and 100,000 memories (about 5 min)
    .venv/bin/python -m bench.ui --screenshots docs/ui   # a small seeded store, one PNG per page

Timing: a fresh database, one user with 10,000 memories and one with 100,000 (bulk-loaded with
COPY, bench/workload.py's texts, hashing embedder), 60 semantic facts with their graph for each,
and a handbook; the view served by uvicorn, read-only, for each user. Each page is fetched warm,
``--runs`` times: the server's answer (an HTTP GET, first byte to last) and the page in headless
Chromium (navigation start to the load event, from the browser's own Navigation Timing).
Writes bench/results/ui-<date>.json and prints a table.

Screenshots: the people of the demo (Alice, Bob and Carol) as memories with their graph, a
handbook, served for Alice, each page captured by the same browser the tests drive.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from bench.harness import fresh_database, machine, percentiles
from bench.loads import bulk_load
from hello_pgmem import Database, HashingEmbedder, KnowledgeBase, MemoryManager, Settings
from hello_pgmem.access import Identity
from hello_pgmem.store import Store
from hello_pgmem.ui import Login, ui_app
from tests.browser import chromium
from tests.served import Served

RESULTS = Path(__file__).resolve().parent / "results"
FACTS = [
    "{p}'s manager is {q}",
    "{p} works at {org} in {city}",
    "{p} lives in {city}",
    "{p} is married to {q}",
]
PEOPLE = ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy"]
ORGS = ["Acme", "Globex", "Initech", "Umbrella"]
CITIES = ["Berlin", "Paris", "Lisbon", "Oslo", "Vienna"]
HANDBOOK = (
    "# Handbook\n\n## Leave\n\nTwenty-five days a year, planned with the team.\n\n"
    "## Travel\n\nTrains for trips under six hours; book through the travel desk.\n\n"
    "## Equipment\n\nA laptop and a second screen for everyone."
)


def facts(count: int) -> list[str]:
    out = []
    for i in range(count):
        p, q = PEOPLE[i % len(PEOPLE)], PEOPLE[(i * 3 + 1) % len(PEOPLE)]
        if p == q:
            q = PEOPLE[(i + 1) % len(PEOPLE)]
        template = FACTS[i % len(FACTS)]
        out.append(template.format(p=p, q=q, org=ORGS[i % len(ORGS)], city=CITIES[i % len(CITIES)]))
    return out


def seed_graph(db: Database, user: str, count: int) -> None:
    embedder = HashingEmbedder()
    MemoryManager(user_id=user, database=db, embedder=embedder).add_memories(facts(count), "semantic")
    KnowledgeBase(db, embedder, user).add_text(HANDBOOK, document_id="handbook")


def pages(settings: Settings, user: str) -> dict[str, str]:
    """The pages to time, by name: deep paging through the cursor of the 100th page."""
    with Store(settings) as store, store.db.transaction(user) as conn:
        row = conn.execute(
            "SELECT created_at, id FROM memories WHERE user_id = %s ORDER BY created_at DESC, id DESC"
            " OFFSET 4999 LIMIT 1",
            (user,),
        ).fetchone()
    assert row is not None
    cursor = f"{row[0].isoformat()}_{row[1]}"
    return {
        "memories": "/memories",
        "memories, page 101": "/memories?" + urllib.parse.urlencode({"before": cursor}),
        "memories, one session": "/memories?session=rare",
        "memory": "",  # filled in: the first memory of the list
        "search": "/search?q=" + urllib.parse.quote("who is Alice's manager?"),
        "graph, depth 2": "/graph?entity=Alice&depth=2",
        "path": "/graph?from=Alice&to=Acme",
        "documents": f"/knowledge/{user}/handbook",
        "statistics": "/stats",
    }


def first_memory(url: str) -> str:
    html = urllib.request.urlopen(url + "/memories?type=semantic").read().decode()
    start = html.index('href="/memories/') + len('href="')
    return html[start : html.index('"', start)]


def time_pages(base: str, paths: dict[str, str], runs: int) -> dict[str, Any]:
    found: dict[str, Any] = {}
    with chromium() as browser:
        page = browser.new_page()
        for name, path in paths.items():
            url = base + path
            urllib.request.urlopen(url).read()  # warm
            server = []
            for _ in range(runs):
                started = time.perf_counter()
                urllib.request.urlopen(url).read()
                server.append((time.perf_counter() - started) * 1000)
            loads = []
            for _ in range(runs):
                page.goto(url)
                loads.append(
                    page.evaluate(
                        "() => { const n = performance.getEntriesByType('navigation')[0];"
                        " return n.loadEventEnd - n.startTime; }"
                    )
                )
            found[name] = {"path": path, "server_ms": percentiles(server), "browser_ms": percentiles(loads)}
    return found


def timing(runs: int) -> dict[str, Any]:
    results: dict[str, Any] = {"machine": machine(), "runs": runs, "sizes": {}}
    with fresh_database() as settings:
        with Database(settings) as db:
            users = {"ui_10k": 10_000, "ui_100k": 100_000}
            results["load"] = bulk_load(db, HashingEmbedder(), users)
            for user in users:
                seed_graph(db, user, 60)
            with db.connection() as conn:
                conn.autocommit = True
                conn.execute("VACUUM ANALYZE memories")
                conn.autocommit = False
        viewing = settings.model_copy(update={"read_only": True})
        for user, size in users.items():
            paths = pages(settings, user)
            with Store(viewing) as store:
                app = ui_app(store, Login(Identity(user, (user,))))
                with Served(app) as served:
                    paths["memory"] = first_memory(served.url)
                    results["sizes"][size] = time_pages(served.url, paths, runs)
    return results


def seed_demo(settings: Settings) -> str:
    """The demo's people, as Alice's memories and graph (Bob's move kept as versions), and a
    handbook; the path of Bob's moved memory."""
    with Database(settings) as db:
        embedder = HashingEmbedder()
        start = dt.datetime.now(dt.UTC) - dt.timedelta(days=95)
        alice = MemoryManager(user_id="alice", database=db, embedder=embedder, session_id="chat-1")
        ids = alice.add_memories(
            [
                "Alice's manager is Carol",
                "Carol works at Acme in Berlin",
                "Bob is married to Dana",
                "Alice works with Bob on the search project",
                "Bob lives in Paris",
            ],
            "semantic",
            importance=[0.9, 0.7, 0.6, 0.8, 0.5],
            timestamps=[start] * 5,
        )
        alice.update_memory(ids[4], "Bob lives in Lyon", valid_from=start + dt.timedelta(days=60))
        talk = [
            "Alice moved to Berlin in May",
            "Alice asked Bob to review the ranking change",
            "Carol approved Alice's holiday in August",
            "Alice and Bob shipped the search project",
            "Alice started learning the cello",
            "Bob recommended a bakery near the office",
        ]
        stamps = [start + dt.timedelta(days=16 * i) for i in range(len(talk))]
        alice.add_memories(talk, "episodic", importance=[0.8, 0.6, 0.5, 0.9, 0.4, 0.2], timestamps=stamps)
        gone = alice.add_memory("Alice once tried opera tickets", "episodic", importance=0.05)
        alice.forget_memories("importance_based", threshold=0.1)
        alice.add_memory("Alice is in a design review right now", "working", importance=0.6)
        assert gone
        KnowledgeBase(db, embedder, "handbook").add_text(HANDBOOK, document_id="handbook")
    return f"/memories/{ids[4]}"


def screenshots(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    taken = []
    with fresh_database() as settings:
        moved = seed_demo(settings)
        with Store(settings.model_copy(update={"read_only": True})) as store:
            app = ui_app(store, Login(Identity("alice", ("handbook",))))
            with Served(app) as served, chromium() as browser:
                page = browser.new_page(viewport={"width": 1200, "height": 760})
                shots = {
                    "memories": "/memories",
                    "memory": moved,
                    "search": "/search?q=" + urllib.parse.quote("who is Alice's manager?"),
                    "graph": "/graph?entity=Alice&depth=2",
                    "knowledge": "/knowledge",
                    "document": "/knowledge/handbook/handbook",
                    "stats": "/stats",
                }
                for name, path in shots.items():
                    page.goto(served.url + path)
                    target = folder / f"{name}.png"
                    page.screenshot(path=str(target), full_page=name != "search")
                    taken.append(target)
            with Served(ui_app(store)) as login, chromium() as browser:  # for token holders
                page = browser.new_page(viewport={"width": 1200, "height": 400})
                page.goto(login.url + "/memories")
                page.screenshot(path=str(folder / "login.png"))
                taken.append(folder / "login.png")
    return taken


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--screenshots", type=Path, help="take the pages' screenshots into this folder")
    args = parser.parse_args()
    if args.screenshots:
        for path in screenshots(args.screenshots):
            print(path)
        return
    results = timing(args.runs)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"ui-{dt.date.today().isoformat()}.json"
    out.write_text(json.dumps(results, indent=2, default=str))
    print(f"{'page':<24} {'memories':>9} {'server p50':>11} {'p95':>7} {'browser p50':>12} {'p95':>7}")
    for size, found in results["sizes"].items():
        for name, row in found.items():
            server, browser = row["server_ms"], row["browser_ms"]
            print(
                f"{name:<24} {size:>9} {server['p50']:>11.1f} {server['p95']:>7.1f}"
                f" {browser['p50']:>12.1f} {browser['p95']:>7.1f}"
            )
    print(out)


if __name__ == "__main__":
    main()
