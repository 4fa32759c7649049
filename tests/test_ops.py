"""Analytics views, the retrieval log and the DBA toolkit: doctor, maintain, erase, export/import."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg import sql

from hello_pgmem import Database, HashingEmbedder, KnowledgeBase, Settings
from hello_pgmem.cli import main
from hello_pgmem.db.age import cypher
from hello_pgmem.memory import MemoryManager
from hello_pgmem.ops.doctor import diagnose
from hello_pgmem.ops.erase import erase_user
from hello_pgmem.ops.maintain import maintain
from hello_pgmem.ops.transfer import export_user, import_user
from tests.conftest import TABLES, Clock

PEOPLE = [
    ("用户张三是一名Python开发者，专注于机器学习和数据分析", 0.8),
    ("李四是前端工程师，擅长React和Vue.js开发", 0.7),
    ("王五是产品经理，负责用户体验设计和需求分析", 0.6),
]


def rows(db: Database, query: str, *args: object) -> list[tuple[Any, ...]]:
    with db.connection() as conn:
        return conn.execute(query, args).fetchall()


def populate(make: Callable[..., MemoryManager], user: str = "alice") -> MemoryManager:
    manager = make(user)
    for content, importance in PEOPLE:
        manager.add_memory(content, "semantic", importance)
        manager.add_memory(content, "episodic", importance)
    manager.add_memory("周五要交周报", "working", 0.9)
    return manager


def test_views_by_hand(make_manager: Callable[..., MemoryManager], clean: Database) -> None:
    manager = populate(make_manager)
    manager.add_memory("李四是前端工程师，擅长 React 和 Vue.js 开发！", "episodic", 0.2)  # a duplicate
    manager.forget_memories("importance_based", threshold=0.3)
    stats = {(r[1]): r[2:5] for r in rows(clean, "SELECT * FROM memory_stats WHERE user_id = 'alice'")}
    assert stats["episodic"][:2] == (3, 1) and float(stats["episodic"][2]) == 0.25
    assert stats["semantic"][:2] == (3, 0) and stats["working"][:2] == (1, 0)
    manager.add_memory("李四是前端工程师，擅长 React 和 Vue.js 开发！", "episodic", 0.4)
    [(copies, example)] = rows(
        clean, "SELECT copies, example FROM memory_duplicates WHERE memory_type = 'episodic'"
    )
    assert copies == 2 and "李四" in example
    assert rows(clean, "SELECT count(*) FROM graph_orphans") == [(0,)]
    mentions = dict(rows(clean, "SELECT name, mentions FROM entity_stats WHERE user_id = 'alice'"))
    assert mentions["李四"] == 1 and mentions["React"] == 1
    assert ("李四", "职业", "前端工程师") in {
        r[:3]
        for r in rows(
            clean, "SELECT source, relation_type, target FROM relation_weights WHERE user_id = 'alice'"
        )
    }
    ranked = rows(
        clean, "SELECT content FROM decay_candidates WHERE user_id = 'alice' ORDER BY eviction_rank"
    )
    assert ranked[0][0].startswith("李四") and ranked[-1][0].startswith(
        "用户张三"
    )  # importance 0.4 first, 0.8 last


def test_decay_candidates_predict_apply_decay(
    make_manager: Callable[..., MemoryManager], clean: Database, clock: Clock
) -> None:
    populate(make_manager)
    first_two = {
        r[0]
        for r in rows(clean, "SELECT id FROM decay_candidates WHERE user_id = 'alice' AND eviction_rank <= 2")
    }
    with clean.connection() as conn:
        assert conn.execute("SELECT apply_decay('alice', 4)").fetchone() == (2,)
    assert {r[0] for r in rows(clean, "SELECT id FROM memories WHERE forgotten_at IS NOT NULL")} == first_two


def test_rag_views(clean: Database, embedder: HashingEmbedder) -> None:
    KnowledgeBase(clean, embedder, "docs").add_text(
        "# 标题\n\n" + "内容。" * 400, "doc1", chunk_size=100, chunk_overlap=10
    )
    [(documents, chunks)] = rows(
        clean, "SELECT documents, chunks FROM rag_namespaces WHERE namespace = 'docs'"
    )
    assert documents == 1 and chunks == rows(clean, "SELECT count(*) FROM chunks")[0][0] > 1
    assert rows(clean, "SELECT id, chunk_count FROM rag_documents") == [("doc1", chunks)]


def test_retrieval_log_is_off_by_default_and_records_when_on(
    make_manager: Callable[..., MemoryManager], clean: Database, embedder: HashingEmbedder
) -> None:
    manager = populate(make_manager)
    manager.retrieve_memories("前端工程师")
    assert rows(clean, "SELECT count(*) FROM retrieval_log") == [(0,)]
    logging_settings = Settings(**{**clean.settings.model_dump(), "retrieval_log": True})
    with Database(logging_settings) as db:
        found = MemoryManager(user_id="alice", database=db, embedder=embedder).retrieve_memories(
            "前端工程师", limit=3
        )
        KnowledgeBase(db, embedder, "docs").search("前端工程师")
    [(kind, query, results, latency)] = rows(
        clean, "SELECT kind, query, results, latency_ms FROM retrieval_log WHERE user_id = 'alice'"
    )
    assert (kind, query) == ("memory", "前端工程师") and latency > 0
    assert [r["id"] for r in results] == [str(item.id) for item in found]
    assert rows(clean, "SELECT user_id, kind FROM retrieval_log WHERE kind = 'rag'") == [("rag:docs", "rag")]


def test_maintain_is_idempotent(
    make_manager: Callable[..., MemoryManager], clean: Database, clock: Clock
) -> None:
    manager = populate(make_manager)
    manager.forget_memories("importance_based", threshold=0.65)
    with clean.connection() as conn:
        conn.execute(
            "UPDATE memories SET forgotten_at = now() - interval '40 days' WHERE forgotten_at IS NOT NULL"
        )
        conn.execute(
            "UPDATE working_memories SET expires_at = now() - interval '1 minute', created_at = now() - interval '1 hour'"
        )
    first = maintain(clean, retention_days=30)
    assert first["purged"] == 2 and first["expired_working"] == 1
    assert rows(clean, "SELECT count(*) FROM entities WHERE name = '王五'") == [(0,)], (
        "the purge took the graph along"
    )
    assert maintain(clean, retention_days=30) == {
        "accesses_folded": 0,
        "expired_working": 0,
        "expired_items": 0,
        "decayed": 0,
        "purged": 0,
        "log_rows_purged": 0,
    }


def test_erase_leaves_no_statistics_row_that_names_the_user(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    """An erased user's totals (and its own namespace's) are deleted, not left at zero: nothing
    lists an erased user."""
    from hello_pgmem import KnowledgeBase
    from hello_pgmem.access import personal_namespace

    manager = populate(make_manager, "ivy")
    KnowledgeBase(clean, manager.embedder, personal_namespace("ivy")).add_text("# Ivy\n\nNotes.", "notes")
    named = (
        "SELECT (SELECT count(*) FROM memory_text_totals WHERE user_id = 'ivy')"
        " + (SELECT count(*) FROM chunk_text_totals WHERE namespace = %s)"
        " + (SELECT count(*) FROM memory_term_counts WHERE user_id = 'ivy')"
        " + (SELECT count(*) FROM memory_sessions WHERE user_id = 'ivy')"
        " + (SELECT count(*) FROM session_terms WHERE user_id = 'ivy')"
    )
    assert rows(clean, named, personal_namespace("ivy"))[0][0] > 2
    counts = erase_user(clean, "ivy")
    assert counts["memory_text_totals"] == 1 and counts["chunk_text_totals"] == 1
    assert rows(clean, named, personal_namespace("ivy")) == [(0,)]


def test_erase_removes_everything_of_one_user(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    populate(make_manager, "alice")
    populate(make_manager, "bob")
    before_bob = {
        t: rows(clean, f"SELECT count(*) FROM {t} WHERE user_id = 'bob'")[0][0]
        for t in TABLES
        if t not in ("chunks", "documents", "embedding_cache", "chunk_embedding_queue")
    }
    counts = erase_user(clean, "alice")
    assert counts["memories"] == 6 and counts["working_memories"] == 1 and counts["entities"] > 0
    for table in before_bob:
        assert rows(clean, f"SELECT count(*) FROM {table} WHERE user_id = 'alice'") == [(0,)]
        assert rows(clean, f"SELECT count(*) FROM {table} WHERE user_id = 'bob'") == [(before_bob[table],)]
    if not clean.graph_enabled:  # no AGE projection (a Citus cluster)
        return
    with clean.connection() as conn:
        graph = clean.settings.graph_name
        assert cypher(conn, graph, "MATCH (n {user_id: $u}) RETURN count(n)", {"u": "alice"}) == [(0,)]
        assert cypher(conn, graph, "MATCH (n {user_id: $u}) RETURN count(n)", {"u": "bob"})[0][0] > 0


def test_export_erase_import_restores_identical_search(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    manager = populate(make_manager)
    before = [
        (m.id, round(m.score or 0, 9))
        for m in manager.retrieve_memories("前端工程师", limit=6, track_access=False)
    ]
    hood = manager.graph_neighbourhood("李四")
    exported = list(export_user(clean, "alice"))
    erase_user(clean, "alice")
    assert manager.retrieve_memories("前端工程师", track_access=False) == []
    counts = import_user(clean, exported)
    assert counts["memory"] == 6 and counts["working"] == 1
    after = [
        (m.id, round(m.score or 0, 9))
        for m in manager.retrieve_memories("前端工程师", limit=6, track_access=False)
    ]
    assert after == before
    assert manager.graph_neighbourhood("李四") == hood
    assert import_user(clean, exported) == dict.fromkeys(counts, 0), "importing twice changes nothing"
    if not clean.graph_enabled:  # no AGE projection (a Citus cluster)
        return
    with clean.connection() as conn:
        graph = clean.settings.graph_name
        assert cypher(conn, graph, "MATCH (m:Memory {user_id: $u}) RETURN count(m)", {"u": "alice"}) == [(3,)]


def test_import_validates_everything_before_writing(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    from hello_pgmem import InvalidInputError

    populate(make_manager)
    exported = list(export_user(clean, "alice"))
    erase_user(clean, "alice")
    broken = [*exported[:-1], '{"kind": "relation", "source_id": "not-a-uuid"}']
    with pytest.raises(InvalidInputError, match=f"line {len(broken)}"):
        import_user(clean, broken)
    assert rows(clean, "SELECT count(*) FROM memories") == [(0,)]


def test_doctor_passes_a_good_setup_and_finds_a_broken_one(
    make_manager: Callable[..., MemoryManager],
    clean: Database,
    server_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    populate(make_manager)
    good = diagnose(clean.settings)
    assert not [f for f in good if f.level == "error"], good
    rls = [f for f in good if f.check == "rls"]
    assert [f.level for f in rls] == ["ok", "warn"], "RLS forced, but a superuser bypasses it: said"
    assert "superuser" in rls[1].message
    role = f"pgmem_reader_{uuid.uuid4().hex[:6]}"
    monkeypatch.setenv("DATABASE_URL", clean.settings.database_url)
    assert main(["doctor"]) == 0
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    try:
        with clean.connection() as conn:
            index = conn.execute(
                "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'chunks_embedding_%%'"
            ).fetchone()
            assert index is not None
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(index[0])))
        broken = diagnose(clean.settings, role)
        errors = {f.check: f for f in broken if f.level == "error"}
        assert set(errors) == {"indexes", "grants"}
        assert "missing" in errors["indexes"].message and errors["indexes"].fix
        assert errors["grants"].fix and errors["grants"].fix.startswith(f"hello-pgmem grant --app {role}")
        assert main(["doctor"]) == 1
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
        with clean.connection() as conn:  # put the index back for the tests that follow
            conn.execute(
                "SELECT _create_model_indexes(model, dimension, index_suffix, 16, 64) FROM embedding_models"
            )


@pytest.mark.one_server
def test_citus_distribute_refuses_a_server_without_citus(
    settings: Settings, clean: Database, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hello_pgmem.core.errors import ConfigurationError
    from hello_pgmem.ops.citus import distribute

    with pytest.raises(ConfigurationError, match="citus is not installed"):
        distribute(settings)
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    assert main(["citus", "distribute"]) == 1
    assert "citus is not installed" in capsys.readouterr().err


def test_doctor_names_a_role_that_does_not_exist_without_a_traceback(
    clean: Database, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = f"app_{uuid.uuid4().hex[:8]}"  # the README's example names a role "app"
    findings = diagnose(clean.settings, missing)
    assert [(f.level, f.check) for f in findings if f.level == "error"] == [("error", "role")]
    monkeypatch.setenv("DATABASE_URL", clean.settings.database_url)
    for args in (["doctor", "--role", missing], ["--json", "doctor", "--role", missing]):
        assert main(args) == 1
        out, err = capsys.readouterr()
        assert f"role '{missing}' does not exist" in out and "Traceback" not in out + err


def test_the_graph_views_count_what_holds_now(
    make_manager: Callable[..., MemoryManager], clean: Database
) -> None:
    """A replaced fact leaves the counts of the present: its relation is superseded and its earlier
    version mentions nothing that holds now (docs/temporal.md)."""
    manager = make_manager("zhang")
    fact = manager.add_memory("张三在北京工作", "semantic", 0.8)
    assert ("张三", "工作于", "北京") in set(
        rows(clean, "SELECT source, relation_type, target FROM relation_weights WHERE user_id = 'zhang'")
    )
    manager.update_memory(fact, content="张三在上海工作")
    relations = set(
        rows(clean, "SELECT source, relation_type, target FROM relation_weights WHERE user_id = 'zhang'")
    )
    assert relations == {("张三", "工作于", "上海")}
    mentions = dict(rows(clean, "SELECT name, mentions FROM entity_stats WHERE user_id = 'zhang'"))
    assert mentions.get("北京", 0) == 0 and mentions["上海"] == 1 and mentions["张三"] == 1
    degree = dict(rows(clean, "SELECT name, degree FROM entity_stats WHERE user_id = 'zhang'"))
    assert degree.get("北京", 0) == 0 and degree["上海"] == 1
