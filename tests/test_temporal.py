"""Facts with two clocks on the real database: when a fact held (valid time) and when the store
knew it (recorded time); a change closes a fact instead of overwriting it, a correction changes
only what the store believed, single-valued relations never overlap, not even under concurrent
writers, and as-of questions are answered by the search, the graph and the SQL functions."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from hello_pgmem import Database, HashingEmbedder, InvalidInputError, MemoryManager, MemoryTool
from hello_pgmem.cli import main
from hello_pgmem.graph.extracted import ExtractedEntity as Entity
from hello_pgmem.graph.extracted import ExtractedRelation as Relation
from hello_pgmem.graph.extracted import Extraction
from hello_pgmem.ops.maintain import maintain
from hello_pgmem.ops.transfer import export_user, import_user
from tests.conftest import entity_names, table_digest
from tests.deployments import ON_CITUS

PARIS = datetime(2019, 3, 1, tzinfo=UTC)
BERLIN = datetime(2023, 5, 1, tzinfo=UTC)
IN_2021 = datetime(2021, 6, 1, tzinfo=UTC)


def server_now(db: Database) -> datetime:
    """The server's clock (recorded times are the server's, never a test clock)."""
    with db.connection() as conn:
        row = conn.execute("SELECT clock_timestamp()").fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def lives(person: str, city: str) -> Extraction:
    return Extraction(
        entities=[Entity(name=person, type="PERSON"), Entity(name=city, type="LOCATION")],
        relations=[Relation(source=person, type="lives_in", target=city)],
    )


def top(memory: MemoryManager, query: str, **as_of: Any) -> str:
    hits = memory.retrieve_memories(query, limit=1, **as_of)
    return hits[0].content if hits else ""


def rows(db: Database, user: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    with db.transaction(user) as conn:
        return [tuple(r) for r in conn.execute(query, params).fetchall()]


@pytest.fixture()
def moved(make_manager: Callable[..., MemoryManager], clean: Database) -> tuple[MemoryManager, Any, datetime]:
    """Alice lived in Paris from 2019; the store learned in a later transaction that she moved to
    Berlin in May 2023. Returns her memory, the memory's id and a server time between the two."""
    memory = make_manager("alice", enable_working=False)
    fact = memory.add_memory(
        "Alice lives in Paris",
        "semantic",
        importance=0.8,
        timestamp=PARIS,
        extraction=lives("Alice", "Paris"),
    )
    before_the_move_was_known = server_now(clean)
    memory.update_memory(fact, "Alice lives in Berlin", valid_from=BERLIN)
    return memory, fact, before_the_move_was_known


def test_a_move_is_answered_for_each_valid_and_known_time(
    moved: tuple[MemoryManager, Any, datetime], clean: Database
) -> None:
    memory, fact, before = moved
    question = "where does Alice live"
    assert top(memory, question) == "Alice lives in Berlin"  # the current truth as currently known
    assert top(memory, question, valid_at=IN_2021) == "Alice lives in Paris"  # where she lived in 2021
    assert top(memory, question, known_at=before) == "Alice lives in Paris"  # what the store believed then
    assert top(memory, question, valid_at=IN_2021, known_at=before) == "Alice lives in Paris"
    assert top(memory, question, valid_at=BERLIN + timedelta(days=1)) == "Alice lives in Berlin"
    # before anything was known, nothing is found
    assert top(memory, question, known_at=before - timedelta(days=1)) == ""
    # the memory keeps its id; its versions are a query
    assert memory.get_memory(fact) is not None and memory.get_memory(fact).content == "Alice lives in Berlin"  # type: ignore[union-attr]
    versions = memory.memory_history(fact)
    assert [(v.content, v.current) for v in versions] == [
        ("Alice lives in Paris", False),
        ("Alice lives in Paris", False),
        ("Alice lives in Berlin", True),
    ]
    retired, closed, current = versions
    assert retired.superseded_at is not None and retired.valid_to is None and retired.reason == "update"
    assert closed.superseded_at is None and closed.valid_to == BERLIN and closed.valid_from == PARIS
    assert current.valid_from == BERLIN and current.valid_to is None
    # the SQL function analysts call gives the same answers
    as_of = "SELECT content FROM memories_as_of(%s, %s, %s)"
    assert rows(clean, "alice", as_of, "alice", IN_2021, server_now(clean)) == [("Alice lives in Paris",)]
    assert rows(clean, "alice", as_of, "alice", server_now(clean), before) == [("Alice lives in Paris",)]
    assert rows(clean, "alice", "SELECT content FROM memories_as_of(%s)", "alice") == [
        ("Alice lives in Berlin",)
    ]


def test_a_search_never_returns_an_earlier_version_by_default(
    moved: tuple[MemoryManager, Any, datetime], clean: Database
) -> None:
    memory, _, _ = moved
    for scoring in ("hybrid", "lexical", "vector"):
        found = memory.retrieve_memories("Alice Paris", limit=10, scoring=scoring)
        assert [hit.content for hit in found] == ["Alice lives in Berlin"], scoring
    assert memory.get_memory_stats().total_memories == 1
    assert rows(
        clean, "alice", "SELECT live, forgotten FROM memory_stats WHERE memory_type = 'semantic'"
    ) == [(1, 0)]
    # restoring forgotten memories does not bring versions back
    assert memory.restore_memories() == 0
    assert [hit.content for hit in memory.retrieve_memories("Paris", limit=10)] == ["Alice lives in Berlin"]


def test_the_graph_follows_the_move(moved: tuple[MemoryManager, Any, datetime], clean: Database) -> None:
    memory, _, before = moved
    now = memory.graph_neighbourhood("Alice")
    assert entity_names(now) == {"Alice", "Berlin"}
    assert entity_names(memory.graph_neighbourhood("Alice", valid_at=IN_2021)) == {
        "Alice",
        "Paris",
    }
    assert entity_names(memory.graph_neighbourhood("Alice", known_at=before)) == {
        "Alice",
        "Paris",
    }
    assert [s.target for s in memory.graph_path("Alice", "Paris", valid_at=IN_2021)] == ["Paris"]
    assert memory.graph_path("Alice", "Paris") == []  # she lives there no more
    relations = "SELECT source, relation_type, target FROM relations_as_of(%s, %s, %s)"
    at_2021 = rows(clean, "alice", relations, "alice", IN_2021, server_now(clean))
    assert at_2021 == [("Alice", "lives_in", "Paris")]
    believed_before = rows(clean, "alice", relations, "alice", server_now(clean), before)
    assert believed_before == [("Alice", "lives_in", "Paris")]
    assert rows(clean, "alice", "SELECT source, relation_type, target FROM relations_as_of(%s)", "alice") == [
        ("Alice", "lives_in", "Berlin")
    ]


def test_a_correction_changes_the_answer_only_for_later_known_times(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    memory = make_manager("bob", enable_working=False)
    fact = memory.add_memory("Bob works at Globex", "semantic", timestamp=PARIS)
    before = server_now(clean)
    assert memory.update_memory(fact, "Bob works at Initech", correction=True)
    after = server_now(clean)
    question = "where does Bob work"
    assert top(memory, question, valid_at=IN_2021, known_at=before) == "Bob works at Globex"
    assert top(memory, question, valid_at=IN_2021, known_at=after) == "Bob works at Initech"  # true then too
    assert top(memory, question) == "Bob works at Initech"
    retired, current = memory.memory_history(fact)
    assert retired.reason == "correction" and retired.valid_to is None and retired.superseded_at is not None
    assert current.valid_from == PARIS  # a correction keeps the fact's time
    with pytest.raises(InvalidInputError, match="valid_from"):
        memory.update_memory(fact, "Bob works at Umbrella", correction=True, valid_from=BERLIN)


def test_a_hit_of_an_earlier_version_names_its_memory_and_every_call_takes_either_id(
    moved: tuple[MemoryManager, Any, datetime],
    clean: Database,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memory, fact, _ = moved
    hit = memory.retrieve_memories("where does Alice live", limit=1, valid_at=IN_2021)[0]
    assert hit.content == "Alice lives in Paris"
    assert hit.id == fact and hit.version_id is not None and hit.version_id != fact
    assert memory.retrieve_memories("where does Alice live", limit=1)[0].version_id is None
    version = str(hit.version_id)
    assert memory.resolve_id(version) == fact and memory.resolve_id(version[:8]) == fact
    assert len(memory.memory_history(hit.version_id)) == 3  # the memory's versions, not one
    monkeypatch.setenv("DATABASE_URL", clean.settings.database_url)
    command = ["--json", "--user", "alice", "search", "where does Alice live", "--limit", "1"]
    assert main([*command, "--valid-at", IN_2021.isoformat()]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["id"], row["version_id"]) == (str(fact), version)
    assert main(["--user", "alice", "history", version[:8]]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
    tool = MemoryTool(user_id="alice", manager=memory, language="en")
    listed = tool.run("history", memory_id=version)
    assert listed.startswith(f"📜 Versions of memory {fact}:") and listed.count("Alice lives in") == 3
    assert memory.update_memory(hit.version_id, "Alice lives in Hamburg")
    assert memory.get_memory(fact).content == "Alice lives in Hamburg"  # type: ignore[union-attr]
    assert memory.remove_memory(hit.version_id)
    assert memory.get_memory(fact) is None and memory.memory_history(fact) == []


def test_a_change_dated_before_the_memory_is_refused_and_changes_nothing(
    make_manager: Callable[..., MemoryManager],
    clean: Database,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DATABASE_URL", clean.settings.database_url)
    memory = make_manager("carol", enable_working=False)
    fact = memory.add_memory("Carol lives in Rome", "semantic", timestamp=datetime(2022, 1, 1, tzinfo=UTC))
    before = table_digest(clean)
    with pytest.raises(
        InvalidInputError, match=r"valid_from: must be after the memory's own time \(2022-01-01"
    ):
        memory.update_memory(fact, "Carol lives in Milan", valid_from=IN_2021)
    assert table_digest(clean) == before
    assert [v.content for v in memory.memory_history(fact)] == ["Carol lives in Rome"]
    args = [
        "--user",
        "carol",
        "update",
        str(fact),
        "--content",
        "Carol lives in Milan",
        "--valid-from",
        IN_2021.isoformat(),
    ]
    assert main(args) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("error: valid_from: must be after") and "updated" not in captured.out
    assert table_digest(clean) == before


def test_a_new_single_valued_relation_closes_the_old_one(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    memory = make_manager("carol", enable_working=False)
    memory.add_memory("Carol lives in Oslo", "semantic", timestamp=PARIS, extraction=lives("Carol", "Oslo"))
    memory.add_memory("Carol lives in Rome", "semantic", timestamp=BERLIN, extraction=lives("Carol", "Rome"))
    # an older fact learned later ends where the newer one starts
    memory.add_memory("Carol lives in Lima", "semantic", timestamp=IN_2021, extraction=lives("Carol", "Lima"))
    periods = rows(
        clean,
        "carol",
        "SELECT target, valid_from, valid_to FROM relations_as_of(%s, 'infinity', 'infinity')"
        " UNION ALL SELECT target, valid_from, valid_to FROM relations_as_of(%s, %s, 'infinity')"
        " UNION ALL SELECT target, valid_from, valid_to FROM relations_as_of(%s, %s, 'infinity')",
        "carol",
        "carol",
        PARIS,
        "carol",
        IN_2021,
    )
    assert periods == [("Rome", BERLIN, None), ("Oslo", PARIS, IN_2021), ("Lima", IN_2021, BERLIN)]
    assert entity_names(memory.graph_neighbourhood("Carol")) == {"Carol", "Rome"}


def test_overlapping_single_valued_relations_are_refused_by_the_database(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    """Two transactions that each give one subject another place at once, in raw SQL: the second
    waits for the first, then the exclusion constraint refuses it."""
    memory = make_manager("erin", enable_working=False)
    about = Extraction(
        entities=[
            Entity(name=n, type="LOCATION" if n != "Erin" else "PERSON") for n in ("Erin", "Kyiv", "Riga")
        ]
    )
    anchor = memory.add_memory("Erin has seen Kyiv and Riga", "semantic", extraction=about)
    insert = """
        INSERT INTO pgmem.relations (user_id, source_id, relation_type, target_id, memory_id, valid_from,
                                     single_valued)
        SELECT 'erin', s.id, 'lives_in', t.id, %s, %s, true
        FROM pgmem.entities s, pgmem.entities t
        WHERE s.user_id = 'erin' AND t.user_id = 'erin' AND s.name = 'Erin' AND t.name = %s
    """
    url = clean.settings.database_url
    refused: list[BaseException] = []
    with psycopg.connect(url) as first, psycopg.connect(url) as second:
        for conn in (first, second):
            conn.execute("SELECT set_config('pgmem.user_id', 'erin', false)")
        first.execute(insert, (anchor, PARIS, "Kyiv"))  # not yet committed

        def other() -> None:
            try:
                second.execute(insert, (anchor, BERLIN, "Riga"))  # waits for the first
                second.commit()
            except psycopg.Error as exc:
                refused.append(exc)
                second.rollback()

        waiting = threading.Thread(target=other)
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive()  # blocked by the first transaction's row
        first.commit()
        waiting.join(10)
    # on one server an ExclusionViolation; a Citus worker's error reaches the coordinator as an
    # internal error with the same message
    assert len(refused) == 1 and "relations_one_target_at_a_time" in str(refused[0])
    assert isinstance(refused[0], psycopg.errors.ExclusionViolation) or ON_CITUS
    assert rows(clean, "erin", "SELECT target FROM relations_as_of(%s)", "erin") == [("Kyiv",)]


def test_concurrent_writers_of_one_subject_leave_one_place_at_a_time(clean: Database) -> None:
    """Writers that give one subject different places at the same moment: every add succeeds and
    one place holds. They queue on the subject's entity row (the upsert locks it), so each closes
    the period of the one before; the constraint is the backstop (the test above), and an add it
    refuses runs again (retry_transient)."""
    embedder = HashingEmbedder()
    places = ["Accra", "Bogota", "Cairo", "Dakar", "Essen", "Fiji"]
    start = threading.Barrier(len(places))
    errors: list[BaseException] = []

    def writer(city: str) -> None:
        memory = MemoryManager(user_id="frank", database=clean, embedder=embedder)
        start.wait()
        try:
            memory.add_memory(
                f"Frank lives in {city}", "semantic", timestamp=BERLIN, extraction=lives("Frank", city)
            )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(city,)) for city in places]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    holding = rows(clean, "frank", "SELECT target FROM relations_as_of(%s)", "frank")
    assert len(holding) == 1 and holding[0][0] in places
    assert len(rows(clean, "frank", "SELECT 1 FROM memories WHERE user_id = 'frank'")) == len(places)


def test_export_and_import_keep_both_clocks(
    moved: tuple[MemoryManager, Any, datetime], clean: Database
) -> None:
    _, _, before = moved
    lines = list(export_user(clean, "alice"))
    clocks = "SELECT content, created_at, valid_to, recorded_at, superseded_at, version_of IS NULL FROM memories WHERE user_id = %s ORDER BY created_at, recorded_at, valid_to"
    relations = "SELECT relation_type, valid_from, valid_to, recorded_at, superseded_at FROM relations WHERE user_id = %s ORDER BY valid_from, recorded_at"
    original = rows(clean, "alice", clocks, "alice"), rows(clean, "alice", relations, "alice")
    import_user(clean, lines, as_user="alice2")
    assert (rows(clean, "alice2", clocks, "alice2"), rows(clean, "alice2", relations, "alice2")) == original
    assert rows(
        clean, "alice2", "SELECT content FROM memories_as_of(%s, %s, %s)", "alice2", server_now(clean), before
    ) == [("Alice lives in Paris",)]


def test_maintain_prunes_history_older_than_its_retention(
    moved: tuple[MemoryManager, Any, datetime], clean: Database
) -> None:
    memory, fact, _ = moved
    assert len(memory.memory_history(fact)) == 3
    long_ago = server_now(clean) - timedelta(days=400)
    with clean.transaction("alice") as conn:  # the versions were retired 400 days ago
        conn.execute("UPDATE memories SET forgotten_at = %s WHERE version_of IS NOT NULL", (long_ago,))
    maintain(clean, analyze=False)  # PGMEM_HISTORY_DAYS: 365
    assert [v.content for v in memory.memory_history(fact)] == ["Alice lives in Berlin"]
    assert top(memory, "where does Alice live") == "Alice lives in Berlin"


def test_erasing_a_memory_erases_its_versions(
    moved: tuple[MemoryManager, Any, datetime], clean: Database
) -> None:
    memory, fact, _ = moved
    assert memory.remove_memory(fact)
    assert rows(clean, "alice", "SELECT count(*) FROM memories WHERE user_id = 'alice'") == [(0,)]
    assert rows(clean, "alice", "SELECT count(*) FROM relations WHERE user_id = 'alice'") == [(0,)]
    assert rows(clean, "alice", "SELECT count(*) FROM entities WHERE user_id = 'alice'") == [(0,)]


def test_as_of_arguments_are_checked(make_manager: Callable[..., MemoryManager]) -> None:
    memory = make_manager("gina", enable_working=False)
    with pytest.raises(InvalidInputError, match="valid_at"):
        memory.retrieve_memories("x", valid_at="yesterday")
    with pytest.raises(InvalidInputError, match="known_at"):
        memory.retrieve_memories("x", known_at=datetime(2020, 1, 1))  # no time zone
    with pytest.raises(InvalidInputError, match="valid_at"):
        memory.retrieve_memories("x", valid_at=IN_2021, time_range=(PARIS, BERLIN))


def test_the_tool_and_the_command_line_ask_as_of_a_time(
    moved: tuple[MemoryManager, Any, datetime],
    clean: Database,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    memory, _, _ = moved
    tool = MemoryTool(manager=memory)
    then = tool.run("search", query="where does Alice live", limit=1, valid_at=IN_2021.isoformat())
    assert "Paris" in then and "Berlin" not in then
    assert "Berlin" in tool.run("search", query="where does Alice live", limit=1)
    refused = tool.run("search", query="where does Alice live", valid_at="2021")
    assert "valid_at" in refused
    monkeypatch.setenv("DATABASE_URL", clean.settings.database_url)
    command = ["--json", "--user", "alice", "search", "where does Alice live", "--limit", "1"]
    assert main([*command, "--valid-at", IN_2021.isoformat()]) == 0
    assert [hit["content"] for hit in json.loads(capsys.readouterr().out)] == ["Alice lives in Paris"]
    assert main([*command]) == 0
    assert [hit["content"] for hit in json.loads(capsys.readouterr().out)] == ["Alice lives in Berlin"]
