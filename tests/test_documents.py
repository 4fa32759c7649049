"""A folder of real, varied documents ingested as a user would: chunk counts and sizes stay in
proportion to the text.

The documents are ones every machine running these tests has or makes: HTML reference pages that
pydoc generates for modules of Python's standard library (tables and all), a data set scikit-learn
ships (as CSV, and as a wide HTML table of 570 columns: the shape that made the old chunker cut
every row into one-token pieces), this repository's Markdown, the licence texts every Debian
system ships in /usr/share/common-licenses, and a PDF and a Word file written here from that text.
"""

from __future__ import annotations

import importlib
import math
import multiprocessing
import pydoc
import zipfile
from collections.abc import Callable
from pathlib import Path

import docx
import pytest
import sklearn.datasets
from fpdf import FPDF

from hello_pgmem import Database, HashingEmbedder, InvalidInputError, KnowledgeBase
from hello_pgmem.core.text import count_tokens
from hello_pgmem.rag.convert import convert_file
from tests.deployments import REPO

pytestmark = pytest.mark.slow
LICENCES = Path("/usr/share/common-licenses")
CHUNK_SIZE, OVERLAP = 800, 100


def write_pdf(text: str, path: Path) -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    pdf.add_page()
    for paragraph in text.split("\n\n"):
        pdf.multi_cell(0, 5, paragraph.encode("latin-1", "replace").decode("latin-1"))
        pdf.ln(2)
    pdf.output(str(path))


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("documents")
    for name in ("json", "collections", "sqlite3", "argparse", "email.message", "tkinter"):
        module = importlib.import_module(name)
        page = pydoc.HTMLDoc().page(pydoc.describe(module), pydoc.HTMLDoc().document(module))
        (root / f"{name}.html").write_text(page, encoding="utf-8")
    data = Path(sklearn.datasets.__file__).parent / "data" / "breast_cancer.csv"
    rows = [line.split(",") for line in data.read_text(encoding="utf-8").splitlines()[1:]]
    (root / "breast_cancer.csv").write_text(data.read_text(encoding="utf-8"), encoding="utf-8")
    columns = list(zip(*rows, strict=True))  # one row per feature, one column per sample
    cells = "".join("<tr>" + "".join(f"<td>{v}</td>" for v in column) + "</tr>" for column in columns)
    header = "<tr>" + "".join(f"<th>sample {i}</th>" for i in range(len(rows))) + "</tr>"
    table = f"<table>{header}{cells}</table>"
    (root / "wide.html").write_text(f"<html><body>{table}</body></html>")
    (root / "wide-titled.html").write_text(f"<html><body><h1>Samples</h1>{table}</body></html>")
    for markdown in [REPO / "README.md", REPO / "DEVELOPERS.md", *sorted((REPO / "docs").glob("*.md"))]:
        (root / markdown.name).write_text(markdown.read_text(encoding="utf-8"), encoding="utf-8")
    assert LICENCES.is_dir(), "a Debian system ships /usr/share/common-licenses"
    gpl = (LICENCES / "GPL-3").read_text(encoding="utf-8")
    (root / "GPL-3.txt").write_text(gpl, encoding="utf-8")
    (root / "Apache-2.0.txt").write_text(
        (LICENCES / "Apache-2.0").read_text(encoding="utf-8"), encoding="utf-8"
    )
    write_pdf(gpl[:20_000], root / "gpl-excerpt.pdf")
    document = docx.Document()
    document.add_heading("GNU General Public License", level=1)
    for paragraph in gpl.split("\n\n")[:80]:
        document.add_paragraph(paragraph)
    document.save(str(root / "gpl.docx"))
    return root


def test_a_folder_of_real_documents(
    folder: Path, clean: Database, make_kb: Callable[[str], KnowledgeBase]
) -> None:
    kb = make_kb("documents")
    results = kb.ingest([folder], chunk_size=CHUNK_SIZE, chunk_overlap=OVERLAP)
    files = sorted(p for p in folder.iterdir())
    assert len(results) == len(files) >= 15
    assert [r.status for r in results] == ["added"] * len(results), [r.error for r in results if r.error]
    total_tokens = 0
    for result in results:
        text = convert_file(result.source_path or "").markdown
        tokens = count_tokens(text)
        total_tokens += tokens
        with clean.transaction(namespace="documents") as conn:
            sizes = conn.execute(
                "SELECT token_count, length(content) FROM chunks WHERE namespace = 'documents' AND document_id = %s",
                (result.document_id,),
            ).fetchall()
        assert len(sizes) == result.chunks >= 1
        assert max(t for t, _ in sizes) <= CHUNK_SIZE, result.source_path
        # chunks are at least about half full: their number follows the text's size
        assert result.chunks <= 2 * math.ceil(tokens / (CHUNK_SIZE - OVERLAP)) + 2, result.source_path
        assert sum(n for _, n in sizes) <= 3 * len(text) + CHUNK_SIZE * 4, result.source_path
    stats = kb.stats()
    assert stats.documents == len(files)
    assert total_tokens <= stats.tokens <= 2 * total_tokens, "no explosion of tokens"


@pytest.fixture()
def make_kb(clean: Database) -> Callable[[str], KnowledgeBase]:
    def make(namespace: str) -> KnowledgeBase:
        return KnowledgeBase(clean, HashingEmbedder(), namespace)

    return make


def test_an_archive_that_would_unpack_to_too_much_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hello_pgmem.rag import unpacking

    bomb = tmp_path / "bomb.docx"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"\0" * 2_000_000)  # 2 MB of zeros: a few KB packed
    assert bomb.stat().st_size < 20_000
    monkeypatch.setattr(unpacking, "MAX_UNPACKED_BYTES", 1_000_000)
    with pytest.raises(InvalidInputError, match=r"would unpack to 2000000 bytes, more than 1000000"):
        convert_file(bomb)
    many = tmp_path / "many.zip"
    with zipfile.ZipFile(many, "w") as archive:
        for number in range(unpacking.MAX_MEMBERS + 1):
            archive.writestr(f"f{number}.txt", b"")
    with pytest.raises(InvalidInputError, match="holds more than 20000 files"):
        convert_file(many)


def test_a_conversion_past_its_time_is_killed(tmp_path: Path) -> None:
    """The converter runs in a process of its own: past the limit it is killed, not waited for."""
    from hello_pgmem.rag.isolated import convert_isolated

    pdf = tmp_path / "slow.pdf"
    write_pdf("A page of text. " * 2000, pdf)
    with pytest.raises(InvalidInputError, match="took longer than 0s to convert"):
        convert_isolated(pdf.read_bytes(), ".pdf", "slow.pdf", timeout=0.001)
    assert [p for p in multiprocessing.active_children() if p.name.startswith("Process")] == []
    assert "A page of text" in convert_isolated(pdf.read_bytes(), ".pdf", "slow.pdf")


def test_a_pdf_of_too_many_pages_is_refused(tmp_path: Path) -> None:
    from hello_pgmem.rag.unpacking import check_pdf

    pdf = tmp_path / "long.pdf"
    document = FPDF()
    document.set_font("Helvetica", size=10)
    for number in range(6):
        document.add_page()
        document.cell(0, 10, f"page {number}")
    document.output(str(pdf))
    check_pdf(pdf.read_bytes(), "long.pdf", pages=6)
    with pytest.raises(InvalidInputError, match=r"'long\.pdf' has more than 5 pages"):
        check_pdf(pdf.read_bytes(), "long.pdf", pages=5)


def write_pdf_placed_word_by_word(text: str, path: Path, gap_pt: float = 2.5) -> None:
    """A PDF that positions every word on its own, with no space glyph between them (as DocBook's
    PDFs do): by default a 2.5 pt gap, under pdfplumber's 3 pt tolerance for a space. A first page
    with a row of three columns makes MarkItDown read the document with pdfplumber, which runs the
    words together."""
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    pdf.add_page()
    for column, heading in enumerate(("Edition", "Version", "Updated")):  # a row MarkItDown takes for a form
        pdf.text(10 + 60 * column, 12, heading)
    pdf.add_page()
    x, y = 10.0, 20.0
    gap = gap_pt / pdf.k  # points to the page's millimetres
    for word in text.split():
        width = pdf.get_string_width(word)
        if x + width > 190:
            x, y = 10.0, y + 6
        pdf.text(x, y, word)
        x += width + gap
    pdf.output(str(path))


def test_a_pdf_read_run_by_run_keeps_its_lines_and_spaces(tmp_path: Path) -> None:
    """Without the layout analysis (a page too dense for it), runs on one baseline are one line,
    each after a space: a PDF placed word by word reads as its sentences."""
    from hello_pgmem.rag.convert import unlaid_pdf_text

    path = tmp_path / "placed.pdf"
    write_pdf_placed_word_by_word((LICENCES / "Apache-2.0").read_text()[:3000], path)
    text = unlaid_pdf_text(path.read_bytes(), "placed.pdf")
    assert "Apache License" in text and "terms and conditions for use" in text.lower()
    assert "Edition Version Updated" in text


@pytest.mark.parametrize("gap_pt", [2.5, 0.6, 0.3])  # 0.06 and 0.03 em: under pdfminer's 0.1 em
def test_a_pdf_whose_words_are_placed_apart_keeps_its_spaces(
    tmp_path: Path, clean: Database, embedder: HashingEmbedder, gap_pt: float
) -> None:
    text = (LICENCES / "Apache-2.0").read_text()[:3000]
    path = tmp_path / "placed.pdf"
    write_pdf_placed_word_by_word(text, path, gap_pt)
    markdown = convert_file(path).markdown
    words = markdown.split()
    assert sum(map(len, words)) / len(words) < 7, markdown[:300]
    assert "Apache License" in markdown and "terms and conditions for use" in markdown.lower()
    kb = KnowledgeBase(clean, embedder, "placed")
    kb.ingest([path])
    [hit] = kb.search("reproduction and distribution", top_k=1)
    assert "reproduction, and distribution" in hit.content.lower()


@pytest.mark.parametrize("pdf", ["/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"])
def test_a_real_pdf_set_word_by_word_is_read_with_spaces(pdf: str) -> None:
    if not Path(pdf).exists():
        pytest.skip(
            f"{pdf} is not on this machine (Debian's shared-mime-info); the PDF written above covers it"
        )
    markdown = convert_file(pdf).markdown
    assert "This is version 0.21 of the Shared MIME-info Database specification" in markdown


GUARDLESS_SCRIPT = """
import hello_pgmem
from hello_pgmem import HashingEmbedder, KnowledgeBase, MemoryManager

with hello_pgmem.connect() as pg:
    MemoryManager(user_id="{user}", database=pg.db, embedder=HashingEmbedder()).add_memory(
        "the script ran", "episodic"
    )
    kb = KnowledgeBase(pg.db, HashingEmbedder(), "{user}")
    print(kb.add_document("{pdf}").status)
"""


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_a_script_without_a_main_guard_converts_a_pdf_once(tmp_path: Path, clean: Database, how: str) -> None:
    """Converting a document runs no code of the caller's ``__main__``: a top-level script that
    ingests a PDF, run as a file or from stdin, runs once and converts it."""
    import os
    import subprocess
    import sys

    pdf = tmp_path / "notes.pdf"
    write_pdf("The harbour opens at six in the morning.", pdf)
    user = f"script_{how}"
    script = GUARDLESS_SCRIPT.format(user=user, pdf=pdf)
    env = {**os.environ, "DATABASE_URL": clean.settings.database_url, "PGMEM_EMBED_MODEL_TYPE": "hashing"}
    if how == "file":
        (tmp_path / "ingest.py").write_text(script)
        run = subprocess.run(
            [sys.executable, "ingest.py"], cwd=tmp_path, env=env, capture_output=True, text=True
        )
    else:
        run = subprocess.run(
            [sys.executable, "-"], input=script, cwd=tmp_path, env=env, capture_output=True, text=True
        )
    assert (run.returncode, run.stdout.strip()) == (0, "added"), run.stderr
    assert "Traceback" not in run.stderr
    with clean.transaction(all_rows=True) as conn:
        memories = conn.execute("SELECT count(*) FROM memories WHERE user_id = %s", (user,)).fetchone()
        chunks = conn.execute(
            "SELECT string_agg(content, ' ') FROM chunks WHERE namespace = %s", (user,)
        ).fetchone()
    assert memories == (1,), "the script ran once"
    assert chunks is not None and "harbour opens at six" in chunks[0]
