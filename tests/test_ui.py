"""The read-only web view in a real headless browser (Debian's Chromium, driven by Playwright),
served by uvicorn as the application role, against the real database: each page renders the
seeded data, a search shows its components, the graph page draws the expected nodes, another
user's token sees none of it, and nothing can be written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect
from starlette.testclient import TestClient

from hello_pgmem import Database, HashingEmbedder, KnowledgeBase, ReadOnlyError, Settings
from hello_pgmem.access import Identity, create_token, list_tokens, revoke_token
from hello_pgmem.memory import MemoryManager
from hello_pgmem.store import Store
from hello_pgmem.ui import Login, drawing, ui_app
from tests.browser import chromium
from tests.deployments import Deployment
from tests.served import Served, free_port

ORIGIN = {"origin": "http://127.0.0.1"}
LEAVE = " ".join(f"Leave rule {i}: twenty-five days a year, planned with the team." for i in range(60))
TRAVEL = " ".join(f"Travel rule {i}: book trains, not planes, for trips under six hours." for i in range(60))
HANDBOOK = f"# Handbook\n\n## Leave\n\n{LEAVE}\n\n## Travel\n\n{TRAVEL}"
HELLO_PGMEM = str(Path(sys.executable).with_name("hello-pgmem"))
PAGES = 120  # alice's episodic memories: three pages of 50


@dataclass(frozen=True)
class Seeded:
    alice_token: str
    bob_token: str
    alice_fact: UUID
    moved: UUID
    forgotten: UUID
    bob_fact: UUID
    app: Settings
    owner: Settings


@pytest.fixture(scope="module")
def seeded(deployment: Deployment) -> Seeded:
    """Alice (memories over three months, a graph, one forgotten memory, a handbook in team_a) and
    Bob (his own, team_b), written by the application role; a token for each."""
    embedder = HashingEmbedder()
    start = datetime.now(UTC) - timedelta(days=70)
    with Database(deployment.app) as db:
        alice = MemoryManager(user_id="alice", database=db, embedder=embedder, session_id="chat-1")
        fact = alice.add_memory(
            "Alice's manager is Carol", "semantic", importance=0.9, metadata={"source": "onboarding"}
        )
        carol = alice.add_memory(
            "Carol works at Globex in Berlin", "semantic", importance=0.7, timestamp=start
        )
        alice.update_memory(carol, "Carol works at Acme in Berlin", valid_from=start + timedelta(days=30))
        alice.add_memory("Alice moved to Berlin in May", "episodic", importance=0.8, timestamp=start)
        gone = alice.add_memory("Alice once liked opera", "episodic", importance=0.05)
        assert alice.forget_memories("importance_based", threshold=0.1) == 1
        alice.add_memory("Alice is in a meeting right now", "working")
        garden = MemoryManager(user_id="alice", database=db, embedder=embedder, session_id="garden")
        turns = [f"Alice wrote note number {i} about the garden" for i in range(PAGES)]
        stamps = [start + timedelta(days=i // 2, minutes=i) for i in range(PAGES)]
        garden.add_memories(turns, "episodic", importance=0.5, timestamps=stamps)
        bob = MemoryManager(user_id="bob", database=db, embedder=embedder)
        bob_fact = bob.add_memory("Bob sails in Brittany with Dana", "semantic", importance=0.8)
        KnowledgeBase(db, embedder, "team_a").add_text(HANDBOOK, document_id="handbook")
        KnowledgeBase(db, embedder, "team_b").add_text("# Boats\n\nBob's boat is blue.", document_id="boats")
    queued = deployment.app.model_copy(update={"embed": "queue", "embedding_queue_workers": 0})
    with Database(queued) as db:  # a chunk left waiting for its vector
        KnowledgeBase(db, embedder, "team_b").add_text("# Sails\n\nBob's sails are red.", document_id="sails")
    with Database(deployment.owner) as owner:
        alice_token, _ = create_token(owner, "alice", ["team_a"], mode="read")
        bob_token, _ = create_token(owner, "bob", ["team_b"], mode="read")
    return Seeded(alice_token, bob_token, fact, carol, gone, bob_fact, deployment.app, deployment.owner)


@pytest.fixture(scope="module")
def served(seeded: Seeded) -> Iterator[Served]:
    """The web view for token holders, as the application role, read-only."""
    with Store(seeded.app.model_copy(update={"read_only": True})) as store, Served(ui_app(store)) as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as found:
        yield found


@pytest.fixture()
def context(browser: Browser) -> Iterator[BrowserContext]:
    made = browser.new_context(viewport={"width": 1280, "height": 900})
    yield made
    made.close()


def log_in(context: BrowserContext, served: Served, token: str) -> Page:
    page = context.new_page()
    page.goto(f"{served.url}/memories")
    expect(page).to_have_url(f"{served.url}/login")  # no cookie yet: the login form
    page.fill("#token", token)
    page.click("form.login button")
    expect(page).to_have_url(f"{served.url}/memories")
    return page


def test_a_bad_token_is_refused_and_a_good_one_kept_in_an_httponly_cookie(
    context: BrowserContext, served: Served, seeded: Seeded
) -> None:
    page = context.new_page()
    page.goto(f"{served.url}/login")
    page.fill("#token", "pgm_not-a-token")
    page.click("form.login button")
    expect(page.locator("#login-error")).to_be_visible()
    assert context.cookies() == []
    page = log_in(context, served, seeded.alice_token)
    (cookie,) = context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["name"] == "pgmem_ui_session"
    assert seeded.alice_token not in cookie["value"], "the cookie holds a session of its own, not the token"
    assert page.evaluate("document.cookie") == ""  # no script can read it
    expect(page.locator("#viewer")).to_have_text("alice")
    page.click("form.logout button")
    expect(page).to_have_url(f"{served.url}/login")
    assert context.cookies() == []


def test_the_memory_list_pages_filters_and_greys_the_forgotten(
    context: BrowserContext, served: Served, seeded: Seeded
) -> None:
    page = log_in(context, served, seeded.alice_token)
    rows = page.locator("#memories tr.memory")
    expect(rows).to_have_count(50)
    forgotten = page.locator("#memories tr.forgotten")  # the newest memory, so on the first page
    expect(forgotten).to_have_count(1)
    expect(forgotten).to_contain_text("Alice once liked opera")
    grey = forgotten.evaluate("row => getComputedStyle(row.cells[2]).color")
    assert grey != rows.last.evaluate("row => getComputedStyle(row.cells[2]).color")
    seen = set(rows.all_inner_texts())
    page.click("#next-page")
    expect(rows).to_have_count(50)
    second = set(rows.all_inner_texts())
    page.click("#next-page")
    expect(rows).to_have_count(PAGES + 4 - 100)
    third = set(rows.all_inner_texts())
    assert not seen & second and not second & third
    assert len(seen | second | third) == PAGES + 4  # every long-term memory once, the forgotten one too
    expect(page.locator("#next-page")).to_have_count(0)
    page.click("#first-page")
    assert set(rows.all_inner_texts()) == seen
    page.goto(f"{served.url}/memories?type=semantic")
    expect(rows).to_have_count(2)
    page.goto(f"{served.url}/memories?session=garden&min_importance=0.5&live=1")
    expect(rows).to_have_count(50)
    expect(page.locator("#memories")).not_to_contain_text("opera")
    page.goto(f"{served.url}/memories?type=working")
    expect(rows).to_have_count(1)
    expect(rows).to_contain_text("in a meeting")
    page.goto(f"{served.url}/memories?min_importance=7")
    expect(page.locator("#error")).to_contain_text("min_importance")


def test_one_memory_shows_its_text_metadata_entities_and_relations(
    context: BrowserContext, served: Served, seeded: Seeded
) -> None:
    page = log_in(context, served, seeded.alice_token)
    page.goto(f"{served.url}/memories?type=semantic")
    page.click("text=Alice's manager is Carol")
    expect(page).to_have_url(f"{served.url}/memories/{seeded.alice_fact}")
    expect(page.locator("#content")).to_have_text("Alice's manager is Carol")
    expect(page.locator("#metadata")).to_contain_text('"source": "onboarding"')
    expect(page.locator("#entities")).to_contain_text("Alice")
    expect(page.locator("#entities")).to_contain_text("Carol")
    expect(page.locator("#relations li")).to_have_count(1)
    expect(page.locator("#relations")).to_contain_text("manager")


def test_a_changed_memory_shows_its_versions_with_both_clocks(
    context: BrowserContext, served: Served, seeded: Seeded
) -> None:
    page = log_in(context, served, seeded.alice_token)
    page.goto(f"{served.url}/memories/{seeded.moved}")
    expect(page.locator("#content")).to_have_text("Carol works at Acme in Berlin")
    versions = page.locator("#versions tr.version")
    expect(versions).to_have_count(3)  # as believed before, as held until the change, and now
    assert versions.all_inner_texts()[0].startswith("Carol works at Globex")
    expect(page.locator("#versions tr.current")).to_contain_text("Acme")
    # a search as of a time before the change finds the earlier text
    page.goto(
        f"{served.url}/search?q=Carol+works&valid_at="
        + (datetime.now(UTC) - timedelta(days=65)).strftime("%Y-%m-%dT%H:%M")
    )
    expect(page.locator("#hits tr.hit").first).to_contain_text("Globex")
    expect(page.locator("#sql")).to_contain_text("search_memories_as_of(")
    page.goto(f"{served.url}/search?q=Carol+works")
    expect(page.locator("#hits")).not_to_contain_text("Globex")
    # the list shows the memory once, not its versions
    page.goto(f"{served.url}/memories?type=semantic")
    expect(page.locator("#memories tr.memory")).to_have_count(2)
    expect(page.locator("#memories tr.memory td.when").first).to_have_text(
        re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d UTC$")
    )


def test_a_search_shows_each_hit_with_every_component_and_the_sql(
    context: BrowserContext, served: Served, seeded: Seeded
) -> None:
    page = log_in(context, served, seeded.alice_token)
    page.goto(f"{served.url}/search")
    page.fill("#q", "Who is Alice's manager?")
    page.click("form.filters button")
    hits = page.locator("#hits tr.hit")
    expect(hits.first).to_contain_text("Alice's manager is Carol")
    headers = page.locator("#hits th.component").evaluate_all("cells => cells.map(c => c.dataset.component)")
    for component in ("text_score", "context_score", "session_score", "vector_score", "graph_score"):
        assert component in headers
    assert headers[:2] == ["text_score", "vector_score"], "the components that weigh most come first"
    assert any("time" in h for h in headers) and any("recency" in h for h in headers)
    assert any("importance" in h for h in headers)
    first = hits.first.locator("td[data-component=text_score]").inner_text()
    assert float(first) > 0
    expect(page.locator("#sql")).to_contain_text("search_memories(")
    expect(page.locator("#sql-params td[data-param=user_id]")).to_have_text("alice")
    expect(page.locator("#sql-params td[data-param=query]")).to_contain_text("384 values")
    expect(page.locator("#sql-literal")).to_contain_text("'alice'")  # to paste into psql
    expect(page.locator("#time-range")).to_have_text("none")
    page.goto(f"{served.url}/search?q=Who+is+Alice%27s+manager%3F&scoring=reference")
    expect(page.locator("#hits tr.hit").first).to_contain_text("Alice's manager is Carol")
    expect(page.locator("#no-sql")).to_be_visible()  # one statement per type: none to show
    page.goto(f"{served.url}/search?q=what+did+Alice+do+in+May+2026")
    expect(page.locator("#time-range")).to_contain_text("2026-05-01")
    # a search records nothing: the view's transactions are read-only
    with Database(seeded.owner) as owner, owner.transaction(all_rows=True) as conn:
        assert conn.execute("SELECT count(*) FROM memory_accesses").fetchone() == (0,)


def test_the_graph_page_draws_the_neighbourhood_and_a_path(
    context: BrowserContext, served: Served, seeded: Seeded
) -> None:
    page = log_in(context, served, seeded.alice_token)
    page.goto(f"{served.url}/graph?entity=Alice&depth=2")
    nodes = page.locator("svg#graph g.node")
    names = set(nodes.evaluate_all("nodes => nodes.map(n => n.dataset.name)"))
    assert {"Alice", "Carol", "Acme"} <= names
    assert "Dana" not in names  # Bob's
    centre = page.locator("svg#graph g.node[data-hops='0']")
    expect(centre).to_have_attribute("data-name", "Alice")
    box = page.locator("svg#graph").bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 100  # drawn, not empty
    edges = page.locator("svg#graph g.edge")
    assert edges.count() >= 2
    page.click("svg#graph g.node[data-name='Carol'] a")
    expect(page.locator("svg#graph g.node[data-hops='0']")).to_have_attribute("data-name", "Carol")
    page.goto(f"{served.url}/graph?from=Alice&to=Acme")
    chain = page.locator("svg#graph g.node").evaluate_all("nodes => nodes.map(n => n.dataset.name)")
    assert chain == ["Alice", "Carol", "Acme"]
    page.goto(f"{served.url}/graph?from=Alice&to=Berlin_never_named")
    expect(page.locator("#error, #no-path")).to_have_count(1)


ARROW_ENDS = """(svg) => [...svg.querySelectorAll("g.edge")].map((edge) => {
    const line = edge.querySelector("line, path");
    const end = line.tagName === "line"
        ? {x: line.x2.baseVal.value, y: line.y2.baseVal.value}
        : line.getPointAtLength(line.getTotalLength());
    const node = svg.querySelector(`g.node[data-name="${CSS.escape(edge.dataset.target)}"]`);
    const circle = node.querySelector("circle");
    const label = node.querySelector("text").getBBox();
    const gap = Math.hypot(end.x - circle.cx.baseVal.value, end.y - circle.cy.baseVal.value) - circle.r.baseVal.value;
    const inLabel = end.x >= label.x && end.x <= label.x + label.width && end.y >= label.y && end.y <= label.y + label.height;
    return {target: edge.dataset.target, gap, inLabel};
})"""
"""For each edge of the drawing: how far its arrowhead's tip stops from its target's circle, and
whether the tip lies inside the target's name."""


def test_each_arrow_points_at_its_targets_circle_not_into_its_name(
    context: BrowserContext, served: Served, seeded: Seeded
) -> None:
    page = log_in(context, served, seeded.alice_token)
    for address in (
        "/graph?entity=Alice&depth=2",
        "/graph?entity=Carol&depth=2",
        "/graph?from=Alice&to=Acme",
    ):
        page.goto(f"{served.url}{address}")
        ends = page.locator("svg#graph").evaluate(ARROW_ENDS)
        assert ends, address
        for end in ends:
            assert 0 < end["gap"] < 8 and not end["inLabel"], (address, end)


def test_the_monthly_chart_fits_a_page_of_a_thousand_pixels() -> None:
    """Ten years of memories, a month apart: the chart (with its margins) is narrower than a
    1,000-pixel page, and its newest month is drawn inside it."""
    months = [datetime(2016 + m // 12, m % 12 + 1, 1, tzinfo=UTC) for m in range(120)]
    chart = drawing.monthly_bars([{"month": m, "memory_type": "episodic", "count": 3} for m in months])
    assert chart.width <= 960
    assert chart.bars[-1].label == "2025-12" and chart.bars[-1].x + chart.bar_width <= chart.width - 20


def test_the_memory_list_counts_the_accesses_the_statistics_count(
    context: BrowserContext, served: Served, seeded: Seeded
) -> None:
    """Searches log their accesses first (folded into the memories later): the list, its counts
    and the statistics all count them."""
    with Database(seeded.app) as db:
        alice = MemoryManager(user_id="alice", database=db, embedder=HashingEmbedder())
        for _ in range(3):
            assert alice.retrieve_memories("who is Alice's manager?", memory_types=["semantic"], limit=1)
    page = log_in(context, served, seeded.alice_token)
    page.goto(f"{served.url}/memories?type=semantic")
    row = page.locator("#memories tr.memory", has_text="Alice's manager is Carol")
    cells = row.locator("td").all_inner_texts()
    assert cells[-1].isdigit() and int(cells[-1]) >= 3, cells
    counted = page.locator("#counts tr", has_text="semantic").locator("td").nth(4).inner_text()
    page.goto(f"{served.url}/stats")
    assert page.locator("#by-type tr", has_text="semantic").locator("td").nth(6).inner_text() == counted


def test_the_chinese_view_names_the_memory_types_in_chinese(seeded: Seeded) -> None:
    with viewed(seeded, "zh") as client:
        listed = client.get("/memories").text
        stats = client.get("/stats").text
    assert "<td>情景记忆" in listed and "<td>语义记忆" in listed and ">情景记忆</option>" in listed
    assert "<td>episodic" not in listed and "<td>semantic" not in listed
    assert "情景记忆</td>" in stats and "> episodic</td>" not in stats


def test_documents_their_chunks_and_the_statistics(
    context: BrowserContext, served: Served, seeded: Seeded
) -> None:
    page = log_in(context, served, seeded.alice_token)
    page.goto(f"{served.url}/knowledge")
    expect(page.locator("#namespaces")).to_contain_text("team_a")
    expect(page.locator("#namespaces")).not_to_contain_text("team_b")
    page.click("text=team_a")
    page.click("#documents a")
    chunks = page.locator("#chunks tr.chunk")
    assert chunks.count() >= 2
    headings = page.locator("#chunks td.heading").all_inner_texts()
    assert "Handbook › Leave" in headings and "Handbook › Travel" in headings
    page.goto(f"{served.url}/stats")
    expect(page.locator("#by-type")).to_contain_text("episodic")
    bars = page.locator("svg#monthly g.bar")
    assert bars.count() >= 3  # the garden notes span three months
    counts = page.locator("svg#monthly rect").evaluate_all("rects => rects.map(r => Number(r.dataset.count))")
    assert sum(counts) == PAGES + 3  # live long-term memories
    expect(page.locator("#entity-stats")).to_contain_text("Carol")


def test_another_users_token_sees_none_of_it(context: BrowserContext, served: Served, seeded: Seeded) -> None:
    page = log_in(context, served, seeded.bob_token)
    expect(page.locator("#viewer")).to_have_text("bob")
    expect(page.locator("#memories tr.memory")).to_have_count(1)
    expect(page.locator("#memories")).not_to_contain_text("Alice")
    page.goto(f"{served.url}/memories/{seeded.alice_fact}")
    expect(page.locator("#error")).to_contain_text("no such memory")
    page.goto(f"{served.url}/search?q=Alice+manager+Carol+garden")
    expect(page.locator("#sql-params td[data-param=user_id]")).to_have_text("bob")
    hits = page.locator("#hits tr.hit")
    expect(hits).to_have_count(1)
    expect(hits).to_contain_text("Bob sails")
    page.goto(f"{served.url}/graph?entity=Alice")
    expect(page.locator("#error")).to_contain_text("Alice")
    expect(page.locator("#top-entities")).not_to_contain_text("Carol")
    page.goto(f"{served.url}/knowledge/team_a")
    expect(page.locator("#error")).to_contain_text("team_a")
    page.goto(f"{served.url}/knowledge/team_a/handbook")
    expect(page.locator("#error")).to_be_visible()
    page.goto(f"{served.url}/stats")  # the embedding queue, of bob's own scopes only
    waiting = page.locator("#embedding-queue tr").all_inner_texts()
    assert [row.split("\t")[:2] for row in waiting[1:]] == [["memories", "0"], ["team_b", "1"]], waiting
    page.goto(f"{served.url}/stats")
    expect(page.locator("#by-type")).not_to_contain_text("working")  # alice's working memory


def test_a_revoked_token_stops_at_the_next_request(
    context: BrowserContext, served: Served, seeded: Seeded
) -> None:
    with Database(seeded.owner) as owner:
        token, token_id = create_token(owner, "alice", ["team_a"], mode="read")
        page = log_in(context, served, token)
        revoke_token(owner, str(token_id))
        answer = page.goto(f"{served.url}/memories")
        assert answer is not None and answer.status == 401  # counted against the address, as a bad login
        expect(page.locator("#login-error")).to_be_visible()
        assert context.cookies() == []  # forgotten
        (info,) = [t for t in list_tokens(owner, "alice") if t.id == token_id]
        assert info.last_used_at is None  # the view's read-only transactions record nothing


def test_the_view_cannot_write(served: Served, seeded: Seeded) -> None:
    client = TestClient(
        ui_app(Store(seeded.app.model_copy(update={"read_only": True}))), base_url="http://127.0.0.1"
    )
    login = client.post("/login", data={"token": seeded.alice_token}, headers=ORIGIN, follow_redirects=False)
    assert login.status_code == 303
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        assert client.request(method, "/memories", headers=ORIGIN).status_code == 405
        assert client.request(method, f"/memories/{seeded.alice_fact}", headers=ORIGIN).status_code == 405
    with Store(seeded.app.model_copy(update={"read_only": True})) as store:
        with store.db.transaction("alice") as conn:
            assert conn.execute("SHOW transaction_read_only").fetchone() == ("on",)
        memory = store.memory("alice")
        before = memory.get_memory_stats().total_memories
        with pytest.raises(ReadOnlyError, match="read-only"):
            memory.add_memory("written through the view", "episodic")
        with pytest.raises(ReadOnlyError):
            memory.remove_memory(seeded.alice_fact)
        with pytest.raises(ReadOnlyError), store.db.transaction("alice") as conn:
            conn.execute("DELETE FROM memories")
        assert memory.get_memory_stats().total_memories == before


@contextmanager
def viewed(seeded: Seeded, language: str = "en") -> Iterator[TestClient]:
    """The view of Alice without a token (a fixed login), in ``language``, on a store of its own."""
    settings = seeded.app.model_copy(update={"read_only": True, "language": language})
    with Store(settings) as store:
        yield TestClient(ui_app(store, Login(Identity("alice", ("team_a",)))), base_url="http://127.0.0.1")


def test_pages_speak_chinese_with_language_zh(seeded: Seeded) -> None:
    with viewed(seeded, "zh") as client:
        page = client.get("/memories")
        assert page.status_code == 200
        assert "记忆" in page.text and "知识图谱" in page.text and "只读视图" in page.text
        assert client.get("/memories?type=nothing").status_code == 400


def test_the_view_refuses_a_writable_store(seeded: Seeded) -> None:
    with Store(seeded.app) as store, pytest.raises(ValueError, match="read-only"):
        ui_app(store)


def test_the_pages_forbid_scripts_and_framing(seeded: Seeded) -> None:
    with viewed(seeded) as client:
        page = client.get("/search", params={"q": "<script>alert(1)</script>"})
        assert "<script>alert(1)</script>" not in page.text  # escaped
        assert "&lt;script&gt;" in page.text
        policy = page.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy


def test_an_address_that_keeps_failing_waits_but_a_good_token_does_not(seeded: Seeded) -> None:
    with Store(seeded.app.model_copy(update={"read_only": True})) as store:
        client = TestClient(ui_app(store, failed_logins_per_minute=3), base_url="http://127.0.0.1")
        for _ in range(20):  # requests without any credential cost nothing and count for nothing
            assert client.get("/memories", follow_redirects=False).status_code == 303
        first = client.post(
            "/login", data={"token": seeded.alice_token}, headers=ORIGIN, follow_redirects=False
        )
        assert first.status_code == 303
        client.cookies.clear()
        statuses = [
            client.post("/login", data={"token": f"pgm_guess{i}"}, headers=ORIGIN).status_code
            for i in range(4)
        ]
        assert statuses == [401, 401, 401, 429]
        client.cookies.set("pgmem_ui_session", "a-forged-session")
        assert client.get("/memories", follow_redirects=False).status_code == 429
        client.cookies.clear()
        again = client.post(
            "/login", data={"token": seeded.alice_token}, headers=ORIGIN, follow_redirects=False
        )
        assert again.status_code == 303, "a token that worked is not shut out by another's guesses"
        assert client.get("/memories").status_code == 200


def test_one_token_cannot_log_everyone_else_out_nor_flush_the_throttle(seeded: Seeded) -> None:
    """A token holds at most 20 sessions (its own oldest close first, nobody else's), logs in at
    most 10 times a minute, and its sessions never count as credentials that worked (which
    would push the failed guesses' memory out)."""
    from hello_pgmem.ui.login import SESSIONS_PER_TOKEN, Sessions

    with Store(seeded.app.model_copy(update={"read_only": True})) as store:
        app = ui_app(store, failed_logins_per_minute=3)
        bob = TestClient(app, base_url="http://127.0.0.1")
        assert (
            bob.post(
                "/login", data={"token": seeded.bob_token}, headers=ORIGIN, follow_redirects=False
            ).status_code
            == 303
        )
        logins = []
        for _ in range(12):
            alice = TestClient(app, base_url="http://127.0.0.1")
            answer = alice.post(
                "/login", data={"token": seeded.alice_token}, headers=ORIGIN, follow_redirects=False
            )
            logins.append(answer.status_code)
        assert logins == [303] * 10 + [429] * 2, logins
        assert bob.get("/memories").status_code == 200, "another token's session stays"
        guesser = TestClient(app, base_url="http://127.0.0.1")
        for i in range(4):
            guesser.post("/login", data={"token": f"pgm_guess{i}"}, headers=ORIGIN)
        assert guesser.post("/login", data={"token": "pgm_guess9"}, headers=ORIGIN).status_code == 429
        assert bob.get("/memories").status_code == 200, "an open session is let through, not remembered"
    sessions = Sessions()
    mine = [sessions.open("pgm_alice") for _ in range(SESSIONS_PER_TOKEN + 5)]
    other = sessions.open("pgm_bob")
    assert [sessions.token(s) for s in mine[:5]] == [None] * 5 and sessions.token(mine[-1]) == "pgm_alice"
    assert sessions.token(other) == "pgm_bob"


def test_posts_from_other_sites_and_foreign_hosts_are_refused(seeded: Seeded) -> None:
    """Login CSRF and DNS rebinding: a POST whose Origin is another site's gets 403, a request for
    a Host that is not this loopback server's gets 421, and nothing is logged in."""
    with Store(seeded.app.model_copy(update={"read_only": True})) as store:
        client = TestClient(ui_app(store), base_url="http://127.0.0.1")
        for origin in ({"origin": "http://attacker.example"}, {"origin": "null"}, {}):
            answer = client.post("/login", data={"token": seeded.alice_token}, headers=origin)
            assert answer.status_code == 403 and "pgmem_ui_session" not in answer.cookies
        fixed = TestClient(
            ui_app(store, Login(Identity("alice", ("team_a",)))), base_url="http://attacker.example"
        )
        assert fixed.get("/memories").status_code == 421
        same = TestClient(
            ui_app(store, Login(Identity("alice", ("team_a",)))), base_url="http://localhost:8377"
        )
        assert same.get("/memories").status_code == 200


def first_answer(url: str, server: subprocess.Popen[bytes], seconds: float = 30) -> str:
    """The page at ``url`` once ``server`` answers."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url) as answer:
                return str(answer.read().decode())
        except OSError:
            assert time.monotonic() < deadline and server.poll() is None, "the view did not start"
            time.sleep(0.2)


def test_the_command_serves_the_loopback_user_and_refuses_tokens_as_a_superuser(
    seeded: Seeded,
    deployment: Deployment,
) -> None:
    port = free_port()
    env = {**os.environ, "DATABASE_URL": seeded.app.database_url}
    command = [HELLO_PGMEM, "--user", "alice", "--namespace", "team_a", "ui", "--port", str(port)]
    with subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL) as server:
        try:
            page = first_answer(f"http://127.0.0.1:{port}/memories?type=semantic", server)
        finally:
            server.terminate()
    assert "Alice&#39;s manager is Carol" in page and "Bob" not in page
    env["DATABASE_URL"] = deployment.superuser.database_url
    refused = subprocess.run(
        [HELLO_PGMEM, "ui", "--tokens", "--port", str(port)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0 and "a superuser" in refused.stderr


def test_no_edge_of_the_graph_drawing_runs_through_a_node_it_does_not_join() -> None:
    """Two entities on opposite sides of the centre: the straight line between them crosses the
    centre, so it is drawn as a curve around it; every edge keeps clear of every other node."""
    from hello_pgmem.graph.store import EntityRef, Neighbourhood, RelationRef

    found = Neighbourhood(
        entity="Alice",
        entities=[
            EntityRef(name="Alice", entity_type="person", hops=0),
            EntityRef(name="Bob", entity_type="person", hops=1),
            EntityRef(name="Berlin", entity_type="place", hops=1),
        ],
        relations=[
            RelationRef(source="Alice", relation_type="knows", target="Bob"),
            RelationRef(source="Alice", relation_type="lives_in", target="Berlin"),
            RelationRef(source="Bob", relation_type="visited", target="Berlin"),
        ],
    )
    drawn = drawing.neighbourhood_drawing(found)
    across = next(e for e in drawn.edges if e.label == "visited")
    assert across.bend is not None, "the line from Bob to Berlin would cross Alice"
    for edge in drawn.edges:
        (ax, ay), (bx, by) = (edge.source.x, edge.source.y), (edge.target.x, edge.target.y)
        cx, cy = edge.bend or ((ax + bx) / 2, (ay + by) / 2)
        for step in range(1, 50):
            t = step / 50
            point = (
                (1 - t) ** 2 * ax + 2 * (1 - t) * t * cx + t**2 * bx,
                (1 - t) ** 2 * ay + 2 * (1 - t) * t * cy + t**2 * by,
            )
            for node in drawn.nodes:
                if node not in (edge.source, edge.target):
                    assert ((point[0] - node.x) ** 2 + (point[1] - node.y) ** 2) ** 0.5 >= 20, (
                        edge.label,
                        node.name,
                    )


TOFU = """(text) => {
    const font = getComputedStyle(document.body).fontFamily;
    const drawn = (character) => {
        const canvas = document.createElement("canvas");
        canvas.width = 48;
        canvas.height = 48;
        const pen = canvas.getContext("2d");
        pen.font = `36px ${font}`;
        pen.fillText(character, 4, 40);
        return Array.from(pen.getImageData(0, 0, 48, 48).data).join(",");
    };
    const missing = drawn("\\u{10FFFD}");  // a code point no font has: the box of a missing glyph
    return [...text].filter((character) => drawn(character) === missing);
}"""
"""The characters of a text that the page's font draws as the box of a missing glyph."""


def test_a_chinese_page_draws_chinese_glyphs_not_boxes(seeded: Seeded, browser: Browser) -> None:
    with viewed(seeded, "zh") as client:
        html = client.get("/memories").text
    page = browser.new_page()
    try:
        page.set_content(html)
        heading = page.locator("h1").first.inner_text()
        assert re.search(r"[\u4e00-\u9fff]", heading), heading
        assert page.evaluate(TOFU, heading + "记忆知识图谱") == []
        assert page.evaluate(TOFU, "\U0010fffd") == ["\U0010fffd"]  # the check sees a missing glyph
    finally:
        page.close()


def test_entities_no_live_memory_mentions_are_not_listed(seeded: Seeded) -> None:
    with viewed(seeded) as client:
        pages = {address: client.get(address).text for address in ("/graph", "/stats")}
    for address, page in pages.items():
        assert "Acme" in page and "Globex" not in page, address  # Carol's old employer: retired


def test_each_page_has_a_title_of_its_own(seeded: Seeded) -> None:
    addresses = ("/memories", "/search", "/graph", "/knowledge", "/stats", f"/memories/{seeded.alice_fact}")
    with viewed(seeded) as client:
        pages = {address: client.get(address).text for address in addresses}
    titles = {}
    for address, page in pages.items():
        found = re.search(r"<title>(.*?)</title>", page, re.S)
        assert found is not None, address
        titles[address] = found.group(1)
    assert len(set(titles.values())) == len(titles), titles
    assert titles["/search"] == "Search · hello_pgmem"


def test_the_chinese_search_names_its_components_in_chinese(seeded: Seeded) -> None:
    with viewed(seeded, "zh") as client:
        page = client.get("/search", params={"q": "Carol works where"}).text
    heads = re.findall(r'<th class="component"[^>]*>(.*?)</th>', page)
    assert "向量" in heads and "文本" in heads, heads
    assert not any(re.fullmatch(r"[a-z ]+", head) for head in heads), heads


def test_a_missing_page_is_a_page_of_the_view(seeded: Seeded) -> None:
    for language, words in (("en", "There is no such page here."), ("zh", "这里没有这个页面。")):
        with viewed(seeded, language) as client:
            answer = client.get("/no/such/page")
        assert answer.status_code == 404
        assert words in answer.text and 'id="viewer"' in answer.text and "<title>" in answer.text


def test_months_lie_on_a_time_axis() -> None:
    def month(year: int, number: int) -> datetime:
        return datetime(year, number, 1, tzinfo=UTC)

    rows = [
        {"month": month(2023, 5), "memory_type": "episodic", "count": 3},
        {"month": month(2023, 6), "memory_type": "episodic", "count": 1},
        {"month": month(2026, 12), "memory_type": "semantic", "count": 2},
    ]
    chart = drawing.monthly_bars(rows)
    may, june, december = (bar.x for bar in chart.bars)
    step = june - may
    assert december - may == pytest.approx(43 * step)  # 43 months later, not the next bar
    assert chart.width <= drawing.MAX_CHART_WIDTH + 90
    long_ago = drawing.monthly_bars([{**rows[0], "month": month(1990, 1)}, rows[2]])
    assert long_ago.width <= drawing.MAX_CHART_WIDTH + 90 and long_ago.bar_width > 0
