"""RAG on PostgreSQL: the seed demo, real files, the embedding cache, MQE/HyDE/ask, namespaces."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docx
import openpyxl
import pytest
from fpdf import FPDF

from hello_pgmem import Database, HashingEmbedder, InvalidInputError, KnowledgeBase, OpenAIEmbedder
from hello_pgmem.demo import KNOWLEDGE
from hello_pgmem.llm import ChatClient
from hello_pgmem.rag.expansion import HYDE_SYSTEM, MQE_SYSTEM
from hello_pgmem.rag.knowledge import TextDocument
from hello_pgmem.tools import RAGTool, ToolRegistry
from hello_pgmem.tools.rag_text import ingest_report
from tests.fake_openai import FakeOpenAI, serve

SEED = KNOWLEDGE


@pytest.fixture()
def kb(clean: Database, embedder: HashingEmbedder) -> KnowledgeBase:
    return KnowledgeBase(clean, embedder, "test")


def chunk_count(db: Database, namespace: str | None = None) -> int:
    with db.connection() as conn:
        row = conn.execute(
            "SELECT count(*) FROM chunks WHERE %s::text IS NULL OR namespace = %s", (namespace, namespace)
        ).fetchone()
    return int(row[0]) if row else 0


def test_seed_demo_through_the_tool(clean: Database, embedder: HashingEmbedder) -> None:
    tool = RAGTool(
        knowledge_base_path="./knowledge_base",
        rag_namespace="test",
        database=clean,
        embedder=embedder,
        language="zh",  # the reference's wording
    )
    for document_id, text in SEED:
        result = tool.run({"action": "add_text", "text": text, "document_id": document_id})
        assert result.startswith(f"✅ 文本已添加到知识库: {document_id}\n📊 分块数量: 1\n")
        assert result.endswith("📝 命名空间: test")
    found = tool.run({"action": "search", "query": "Python编程语言的历史", "limit": 3, "min_score": 0.1})
    lines = found.splitlines()
    assert lines[0] == "搜索结果："
    assert lines[2].startswith("1. 文档: **python_intro** (相似度: ")
    stats = tool.run({"action": "stats"})
    assert "📊 文档分块数: 3" in stats and "📝 命名空间: test" in stats
    assert (
        "PostgreSQL 模式 pgmem" in stats and "knowledge_base" not in stats and "test_collection" not in stats
    ), "stats names where the documents are, not a folder or collection that does not exist"
    assert chunk_count(clean, "default") == 0, "the tool's namespace is used, not 'default'"


def make_files(folder: Path) -> dict[str, Path]:
    files = {}
    files["md"] = folder / "guide.md"
    files["md"].write_text("# 部署指南\n\n## 数据库\n\n部署前先启动 PostgreSQL 数据库。\n", encoding="utf-8")
    files["html"] = folder / "page.html"
    files["html"].write_text(
        "<html><body><h1>天气预报</h1><p>明天北京有暴雨，请带伞。</p></body></html>", encoding="utf-8"
    )
    document = docx.Document()
    document.add_heading("季度报告", 1)
    document.add_paragraph("第三季度销售额增长了百分之十二。")
    files["docx"] = folder / "report.docx"
    document.save(str(files["docx"]))
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["城市", "人口"])
    sheet.append(["杭州", "1200万"])
    files["xlsx"] = folder / "cities.xlsx"
    book.save(files["xlsx"])
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text="Quarterly revenue of the aurora project grew strongly.")
    files["pdf"] = folder / "aurora.pdf"
    pdf.output(str(files["pdf"]))
    return files


@pytest.mark.parametrize(
    ("kind", "query", "expected"),
    [
        ("md", "部署前启动什么", "PostgreSQL"),
        ("html", "明天北京天气", "暴雨"),
        ("docx", "第三季度销售额", "百分之十二"),
        ("xlsx", "杭州人口", "1200万"),
        ("pdf", "aurora project revenue", "aurora"),
    ],
)
def test_real_files_are_ingested_and_searchable(
    kb: KnowledgeBase, tmp_path: Path, kind: str, query: str, expected: str
) -> None:
    files = make_files(tmp_path)
    result = kb.add_document(files[kind])
    assert result.status == "added" and result.chunks >= 1
    hits = kb.search(query, 3)
    assert hits[0].source_path == str(files[kind])
    assert expected in hits[0].content
    if kind == "md":
        assert hits[0].heading_path == ["部署指南"]  # the chunk starts in that section


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("broken.pdf", b"%PDF-1.4 not really a pdf"),
        ("broken.docx", b"PK\x03\x04 not a zip"),
        ("broken.xlsx", b"garbage"),
        ("notes.exe", b"MZ\x90\x00\x03\x00\x00\x00"),
        ("latin1.txt", bytes(range(128, 256)) * 2),
    ],
)
def test_a_corrupt_file_is_a_clear_error_and_changes_nothing(
    kb: KnowledgeBase, clean: Database, tmp_path: Path, name: str, data: bytes
) -> None:
    kb.add_text("已有的文档内容", "existing")
    path = tmp_path / name
    path.write_bytes(data)
    before = chunk_count(clean)
    with pytest.raises(InvalidInputError) as caught:
        kb.add_document(path)
    assert caught.value.field == "file_path" and name in str(caught.value)
    assert chunk_count(clean) == before


def test_ingest_reports_each_file_and_keeps_going(kb: KnowledgeBase, tmp_path: Path) -> None:
    files = make_files(tmp_path)
    (tmp_path / "zz_broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    seen: list[tuple[int, int, str]] = []
    results = kb.ingest([tmp_path], progress=lambda n, total, r: seen.append((n, total, r.status)))
    statuses = {Path(r.source_path or "").name: r.status for r in results}
    assert statuses["zz_broken.pdf"] == "failed"
    assert all(statuses[f.name] == "added" for f in files.values())
    assert [s[0] for s in seen] == list(range(1, len(files) + 2))
    again = kb.ingest([tmp_path])
    assert {r.status for r in again if r.status != "failed"} == {"unchanged"}


def test_one_path_is_one_path_and_anything_but_paths_is_refused(kb: KnowledgeBase, tmp_path: Path) -> None:
    """A str or a Path is one path, never the characters of its name (a "/" walked the whole
    filesystem); a value that is neither a path nor a list of paths is refused before anything
    is read or written."""
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nThe harbour opens at six.\n", encoding="utf-8")
    for one in (str(note), note):
        [result] = kb.ingest(one)
        assert result.status in ("added", "unchanged") and result.source_path == str(note)
    before = chunk_count(kb.db, kb.namespace)
    for bad in (42, b"/etc", {"path": str(note)}, [str(note), 7], None):
        with pytest.raises(InvalidInputError, match="paths"):
            kb.ingest(bad)  # type: ignore[arg-type]
    assert chunk_count(kb.db, kb.namespace) == before


def test_a_folder_lists_every_file_it_skips_and_reads_text_of_any_name(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    (tmp_path / "mpfr-README").write_text(
        "MPFR is a library for multiple-precision floating-point computations.\n"
    )
    (tmp_path / "procps-README.Debian").write_text(
        "procps for Debian: the watch command is in this package.\n"
    )
    (tmp_path / "firmware.bin").write_bytes(bytes(range(256)) * 4)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    results = kb.ingest([tmp_path])
    by_name = {Path(r.source_path or "").name: r for r in results}
    assert set(by_name) == {"mpfr-README", "procps-README.Debian", "firmware.bin"}, (
        "hidden folders are not walked"
    )
    assert by_name["mpfr-README"].status == by_name["procps-README.Debian"].status == "added"
    skipped = by_name["firmware.bin"]
    assert skipped.status == "skipped" and skipped.error is not None
    assert "'firmware.bin': not text" in skipped.error and "'.bin'" in skipped.error
    assert kb.search("multiple-precision floating-point", 1)[0].source_path == str(tmp_path / "mpfr-README")
    report = ingest_report(results, kb.namespace)
    assert "skipped: " + str(tmp_path / "firmware.bin") in report and "'firmware.bin': not text" in report
    assert report.startswith("⚠️") and report.ok, "some skipped: no success mark, not an error"
    missing = ingest_report(kb.ingest([tmp_path / "nowhere.md"]), kb.namespace)
    assert missing.startswith("❌") and not missing.ok, "nothing ingested: an error, marked as one"
    named = tmp_path / "CHANGES"
    named.write_text("Version 2 adds the watch command.\n")
    assert kb.add_document(named).status == "added", "a text file named directly needs no extension"


def test_re_adding_replaces_atomically(kb: KnowledgeBase, clean: Database) -> None:
    kb.add_text("# 旧\n\n旧的内容第一段。\n\n旧的内容第二段。", "doc")
    result = kb.add_text("# 新\n\n全新的内容。", "doc")
    assert result.status == "replaced"
    with clean.connection() as conn:
        contents = [
            r[0] for r in conn.execute("SELECT content FROM chunks WHERE document_id = 'doc'").fetchall()
        ]
    assert contents == ["# 新\n\n全新的内容。"]


def test_batch_ingest_is_all_or_nothing(kb: KnowledgeBase, clean: Database) -> None:
    docs = [
        TextDocument(f"# 文档{i}\n\n第{i}篇的内容，关于项目上线。", f"d{i}", title=f"t{i}") for i in range(5)
    ]
    results = kb.add_texts(docs, chunk_size=200, chunk_overlap=20)
    assert [(r.document_id, r.status) for r in results] == [(f"d{i}", "added") for i in range(5)]
    assert chunk_count(clean, "test") == sum(r.chunks for r in results) == 5
    assert kb.search("第3篇的内容", top_k=1)[0].document_id == "d3"
    again = kb.add_texts(
        [docs[0], TextDocument("# 新\n\n新的一篇。", "d9")], chunk_size=200, chunk_overlap=20
    )
    assert [r.status for r in again] == ["unchanged", "added"]
    before = chunk_count(clean, "test")
    with pytest.raises(InvalidInputError) as bad:
        kb.add_texts([TextDocument("# 好\n\n好的。", "d10"), TextDocument("", "d11")])
    assert bad.value.field == "content"
    with pytest.raises(InvalidInputError) as repeated:
        kb.add_texts([TextDocument("一", "same"), TextDocument("二", "same")])
    assert repeated.value.field == "documents"
    assert chunk_count(clean, "test") == before, "a bad batch writes nothing"


def test_unchanged_text_makes_no_embedding_calls(clean: Database) -> None:
    with (
        serve(FakeOpenAI(dimension=16)) as fake,
        Database(clean.settings.model_copy(update={"embed": "now"})) as db,
    ):
        embedder = OpenAIEmbedder("fake-embed", base_url=fake.base_url, dimension=16, batch_size=64)
        kb = KnowledgeBase(db, embedder, "cache")
        text = "\n\n".join(f"## 第{i}节\n\n" + f"第{i}节的内容。" * 40 for i in range(6))
        first = kb.add_text(text, "doc", chunk_size=120, chunk_overlap=10)
        calls = fake.embedding_calls()
        assert first.embedded == first.chunks and calls >= 1
        assert kb.add_text(text, "doc", chunk_size=120, chunk_overlap=10).status == "unchanged"
        assert kb.add_text(text, "copy", chunk_size=120, chunk_overlap=10).embedded == 0
        assert fake.embedding_calls() == calls, "the cache answered for the identical copy"
        changed = text.replace("第3节的内容。", "第3节改写后的内容。", 1)
        result = kb.add_text(changed, "doc", chunk_size=120, chunk_overlap=10)
        assert result.status == "replaced"
        assert 0 < result.embedded < result.chunks, "only the changed paragraph's chunks are embedded"
        new_texts = fake.embedded_texts()[-result.embedded :]
        assert all("第3节" in t for t in new_texts)


def chat_script(body: dict[str, Any]) -> str:
    system = body["messages"][0]["content"]
    if system in MQE_SYSTEM.values():
        return "什么是检索增强生成\nRAG 技术的定义"
    if system in HYDE_SYSTEM.values():
        return "RAG 是一种结合信息检索与文本生成的技术，通过检索外部知识增强大语言模型。"
    return "RAG 是结合信息检索和文本生成的技术 [1]。"


@pytest.fixture()
def chat() -> Iterator[FakeOpenAI]:
    with serve(FakeOpenAI(chat=chat_script)) as fake:
        yield fake


def test_mqe_hyde_and_ask_with_citations(
    clean: Database, embedder: HashingEmbedder, chat: FakeOpenAI
) -> None:
    llm = ChatClient("fake-chat", base_url=chat.base_url, api_key="k", max_retries=0)
    kb = KnowledgeBase(clean, embedder, "llm", llm=llm, language="zh")
    for document_id, text in SEED:
        kb.add_text(text, document_id)
    hits = kb.search("RAG", 3, enable_mqe=True, enable_hyde=True)
    systems = [r["body"]["messages"][0]["content"] for r in chat.requests]
    assert systems == [MQE_SYSTEM["zh"], HYDE_SYSTEM["zh"]]
    assert "原始查询：RAG\n请给出2个不同表述的查询" in chat.requests[0]["body"]["messages"][1]["content"]
    assert hits[0].document_id == "rag_concept"
    assert set(hits[0].matched_by) >= {"original", "mqe", "hyde"}
    answer = kb.ask("RAG 是什么？", 3)
    assert answer.answer == "RAG 是结合信息检索和文本生成的技术 [1]。"
    assert answer.sources[0].document_id == "rag_concept" and answer.sources[0].cited
    prompt = chat.requests[-1]["body"]["messages"][1]["content"]
    assert "[1] (rag_concept)" in prompt and "【问题】RAG 是什么？" in prompt
    english = KnowledgeBase(clean, embedder, "llm", llm=llm)  # the default language: English prompts
    english.search("RAG", 3, enable_mqe=True, enable_hyde=True)
    systems = [r["body"]["messages"][0]["content"] for r in chat.requests[-2:]]
    assert systems == [MQE_SYSTEM["en"], HYDE_SYSTEM["en"]]
    english.ask("What is RAG?", 3)
    assert "Question: What is RAG?" in chat.requests[-1]["body"]["messages"][1]["content"]


def test_a_slow_chat_model_degrades_to_plain_search(
    clean: Database, embedder: HashingEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    with serve(FakeOpenAI(chat=chat_script, delay_s=2.0)) as fake:
        llm = ChatClient("slow", base_url=fake.base_url, timeout_s=0.3, max_retries=0)
        kb = KnowledgeBase(clean, embedder, "slow", llm=llm)
        for document_id, text in SEED:
            kb.add_text(text, document_id)
        hits = kb.search("Python编程语言的历史", 3, enable_mqe=True, enable_hyde=True)
        assert hits[0].document_id == "python_intro"
        assert hits[0].matched_by == ["original"]
        assert "MQE) failed" in caplog.text and "HyDE) failed" in caplog.text
        answer = kb.ask("Python 是谁发布的？", 3)
        assert answer.answer is None and answer.sources and "the chat model failed" in (answer.notice or "")


def test_ask_without_a_model_returns_passages(kb: KnowledgeBase) -> None:
    for document_id, text in SEED:
        kb.add_text(text, document_id)
    answer = kb.ask("Python 是谁发布的？", 2, max_chars=200)
    assert answer.answer is None and "no chat model is configured" in (answer.notice or "")
    in_chinese = KnowledgeBase(kb.db, kb.embedder, kb.namespace, language="zh").ask("Python 是谁发布的？", 2)
    assert "未配置大语言模型" in (in_chinese.notice or "")
    assert answer.context.startswith("[1] (python_intro)")
    assert len(answer.context) <= 200
    assert not any("MQE" in note for note in answer.notes), "not asked for: not mentioned"
    advanced = kb.ask("Python 是谁发布的？", 2, enable_mqe=True, enable_hyde=True)
    assert (
        "MQE and HyDE were skipped (no chat model is configured: LLM_MODEL_ID): a plain search"
        in advanced.notes
    )


def test_namespaces_are_isolated(clean: Database, embedder: HashingEmbedder) -> None:
    first, second = KnowledgeBase(clean, embedder, "team_a"), KnowledgeBase(clean, embedder, "team_b")
    first.add_text("团队 A 的秘密配方是桂花糖。", "recipe")
    second.add_text("团队 B 的会议纪要。", "minutes")
    assert {h.document_id for h in second.search("秘密配方 桂花糖", 5)} == {"minutes"}
    assert second.clear() == 1
    assert first.stats().chunks == 1 and second.stats().chunks == 0
    tool = RAGTool(rag_namespace="team_a", database=clean, embedder=embedder)
    assert tool.run("clear", namespace="team_a").startswith("⚠️ Dangerous: clearing the knowledge base")
    assert first.stats().chunks == 1


def test_document_filter_and_management(kb: KnowledgeBase) -> None:
    for document_id, text in SEED:
        kb.add_text(text, document_id)
    hits = kb.search("Python编程语言", 3, document_ids=["ml_basics"])
    assert {h.document_id for h in hits} == {"ml_basics"}
    assert {d.id for d in kb.list_documents()} == {d for d, _ in SEED}
    assert kb.remove_document("ml_basics") and not kb.remove_document("ml_basics")
    assert kb.stats().documents == 2


def test_tool_actions_expanded_and_bad_input(clean: Database, embedder: HashingEmbedder) -> None:
    registry = ToolRegistry(language="zh")
    registry.register_tool(
        RAGTool(rag_namespace="t", database=clean, embedder=embedder, expandable=True, language="zh")
    )
    assert set(registry.list_tools()) == {
        "rag_add_document",
        "rag_add_text",
        "rag_search",
        "rag_ask",
        "rag_stats",
        "rag_list_documents",
        "rag_remove_document",
        "rag_clear",
    }
    assert registry.execute_tool("rag_add_text", {"text": "   "}) == "❌ 文本内容不能为空"
    assert registry.execute_tool("rag_search", {"query": ""}) == "❌ 搜索查询不能为空"
    assert (
        registry.execute_tool("rag_add_document", {"file_path": "no/such.md"}) == "❌ 文件不存在: no/such.md"
    )
    assert registry.execute_tool("rag_search", {"query": "x", "limit": 0}).startswith(
        "❌ 执行操作 'search' 时发生错误: limit"
    )
    assert registry.execute_tool("rag_add_text", {"text": "x", "chunk_size": "big"}).startswith(
        "❌ 参数错误: chunk_size"
    )
    for sizes in ({"chunk_size": 10**9}, {"chunk_size": 15}, {"chunk_overlap": 10**6}):
        refused = registry.execute_tool("rag_add_text", {"text": "a\n\n" * 5000, **sizes})
        assert refused.startswith(f"❌ 参数错误: {next(iter(sizes))}"), refused
    tool = registry.get_tool("rag_add_text")
    assert tool is not None
    parameters = tool.to_openai_schema()["function"]["parameters"]
    assert parameters["required"] == ["text"]
    assert (
        parameters["properties"]["chunk_size"]["minimum"],
        parameters["properties"]["chunk_size"]["maximum"],
    ) == (
        16,
        8192,
    )
    assert chunk_count(clean) == 0
    assert json.dumps(registry.to_openai_tools(), ensure_ascii=False)


def test_passages_can_feed_the_memory_of_a_user(clean: Database, embedder: HashingEmbedder) -> None:
    from hello_pgmem.tools import MemoryTool

    memory = MemoryTool("reader", database=clean, embedder=embedder)
    tool = RAGTool(
        rag_namespace="docs", database=clean, embedder=embedder, memory_tool=memory, remember_passages=True
    )
    tool.run("add_text", text=SEED[0][1], document_id="python_intro")
    tool.run("search", query=SEED[0][1])
    tool.run("search", query=SEED[0][1])
    ids = memory.memory_manager.find_by_metadata("document_id", "python_intro")
    assert len(ids) == 1, "stored once, however often it is found"


def test_common_words_do_not_make_every_chunk_a_candidate(kb: KnowledgeBase) -> None:
    """More chunks than the cap (200 for top 5) share the query's common words: the lexical branch
    scores the chunks with a rarer word, or, with none, the chunks that hold every word."""
    documents = [
        TextDocument(f"# Note {i}\n\nThe deployment pipeline ran at step {i} for the team.", f"note{i}")
        for i in range(500)
    ]
    documents.append(
        TextDocument("# Kraken\n\nThe deployment pipeline of the kraken service failed.", "kraken")
    )
    documents.append(TextDocument("# Other\n\nA deployment without any build steps at all.", "other"))
    documents.append(TextDocument("# Short\n\nDeployment pipeline.", "short"))
    kb.add_texts(documents)
    assert kb.search("why did the kraken deployment fail?", 1)[0].document_id == "kraken"
    common = {hit.document_id: hit.text_score for hit in kb.search("deployment pipeline", 5)}
    assert sum(score > 0 for score in common.values()) >= 3  # found by both words
    assert common.get("other", 0.0) == 0.0  # lacks "pipeline": not a lexical candidate
    # the shortest chunk with both words is scored (and best) whichever 200 the cap kept: the
    # nearest chunks that hold every common word are candidates too
    assert common["short"] == 1.0


def test_a_sections_title_finds_each_of_its_chunks_by_its_words(kb: KnowledgeBase, clean: Database) -> None:
    """A chunk's lexemes read its heading path, as its embedding does: every chunk of a long
    section is found by the words of its title, the later ones too, whose text lacks them."""
    paragraphs = "\n\n".join(f"Paragraph {i} tells of harbour cranes and their cables." for i in range(80))
    kb.add_text(f"# Kraken rollout\n\n{paragraphs}", "guide")
    kb.add_text("# Other\n\nNothing of the kind here.", "other")
    with clean.connection() as conn:
        rows = conn.execute(
            "SELECT position, content ILIKE '%%kraken%%', lexemes @@ to_tsquery('simple', 'kraken')"
            " FROM chunks WHERE namespace = 'test' AND document_id = 'guide' ORDER BY position"
        ).fetchall()
    assert len(rows) >= 2 and not rows[-1][1], "the last chunk's text does not name its title"
    assert all(found for _, _, found in rows)
    hits = kb.search("kraken", top_k=len(rows))
    assert {h.position for h in hits if h.text_score > 0} == {r[0] for r in rows}


def test_an_unchanged_file_or_text_is_decided_before_conversion_and_chunking(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hello_pgmem.rag.chunking import chunk_markdown
    from hello_pgmem.rag.convert import convert_file

    calls = {"convert": 0, "chunk": 0}

    def counted(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr("hello_pgmem.rag.ingest.convert_file", counted("convert", convert_file))
    monkeypatch.setattr("hello_pgmem.rag.ingest.chunk_markdown", counted("chunk", chunk_markdown))
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\n" + "The aurora project ships in May. " * 200)
    first = kb.add_document(path)
    assert first.status == "added" and calls == {"convert": 1, "chunk": 1}
    again = kb.ingest([path])[0]
    assert (again.status, again.chunks) == ("unchanged", first.chunks) and calls == {"convert": 1, "chunk": 1}
    assert kb.add_document(path, chunk_size=200).status == "replaced", "another chunking is a change"
    path.write_text("# Notes\n\nThe aurora project ships in June.")
    assert kb.add_document(path, chunk_size=200).status == "replaced" and calls == {"convert": 3, "chunk": 3}
    kb.add_text("a text of its own", "text")
    assert kb.add_text("a text of its own", "text").status == "unchanged" and calls["chunk"] == 4


def test_a_program_named_as_a_document_and_a_picture_without_a_model_are_skipped(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    """Binary data with a document's extension is no text (it stored chunks of control characters);
    an image no chat model can describe is skipped, not failed; each says why."""
    import shutil
    import sys

    shutil.copy(sys.executable, tmp_path / "program.html")
    (tmp_path / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    (tmp_path / "notes.md").write_text("# Notes\n\nThe harbour opens at six.\n")
    results = {Path(r.source_path or "").name: r for r in kb.ingest([tmp_path])}
    assert results["notes.md"].status == "added"
    assert (results["program.html"].status, results["photo.png"].status) == ("skipped", "skipped")
    assert "binary data, not text" in (results["program.html"].error or "")
    assert "chat model describes it" in (results["photo.png"].error or "")
    with kb.db.connection() as conn:
        stored = conn.execute(
            "SELECT string_agg(content, '') FROM chunks WHERE namespace = %s", (kb.namespace,)
        ).fetchone()
    assert stored is not None and "\ufffd" not in stored[0] and "harbour" in stored[0]


def test_another_folders_file_of_the_same_name_replaces_nothing(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for project, words in (("first", "the lighthouse keeper"), ("second", "the orchard ledger")):
        (tmp_path / project / "docs").mkdir(parents=True)
        (tmp_path / project / "docs" / "guide.md").write_text(f"# Guide\n\nAbout {words}.", encoding="utf-8")
    monkeypatch.chdir(tmp_path / "first")
    assert [r.status for r in kb.ingest("docs")] == ["added"]
    assert [r.status for r in kb.ingest("./docs/guide.md")] == ["unchanged"]  # the same file
    monkeypatch.chdir(tmp_path / "second")
    refused = kb.ingest("docs")
    assert [r.status for r in refused] == ["failed"]
    assert "document_id: 'docs/guide.md' of namespace" in (refused[0].error or "")
    assert str(tmp_path / "first" / "docs" / "guide.md") in (refused[0].error or "")
    assert [hit.source_path for hit in kb.search("lighthouse keeper", 1)] == ["docs/guide.md"]
    assert all("orchard" not in hit.content for hit in kb.search("orchard ledger", 3))
    (tmp_path / "first" / "docs" / "guide.md").write_text(
        "# Guide\n\nAbout the lighthouse lamp.", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path / "first")
    assert [r.status for r in kb.ingest("docs")] == ["replaced"]  # its own file changed
