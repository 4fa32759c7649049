"""Hostile documents: the converter's worker stops at its CPU time and at its memory, refuses a PDF
whose content inflates past the cap before any layout and text past the character cap, and only
so many conversions run at once, one per user."""

from __future__ import annotations

import io
import threading
import time

import docx
import pytest

from hello_pgmem import InvalidInputError
from hello_pgmem.core.errors import BusyError
from hello_pgmem.rag import isolated
from hello_pgmem.rag.isolated import ConversionSlots, convert_isolated
from hello_pgmem.rag.unpacking import MAX_PDF_CONTENT_BYTES
from tests.media import overlapping_lines_pdf, pdf_of_one_page, spinning_pdf

pytestmark = pytest.mark.slow


def word_file(text: str) -> bytes:
    document = docx.Document()
    document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_a_pdf_that_spins_the_layout_stops_at_its_cpu_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolated, "WORKER_CPU_S", 2)
    monkeypatch.setattr(isolated, "LAYOUT_CPU_S", 60)  # the layout's own share past the whole
    with pytest.raises(InvalidInputError, match=r"'spin\.pdf' took more than 2s of CPU to convert"):
        convert_isolated(spinning_pdf(), ".pdf", "spin.pdf")


def test_a_pdf_whose_layout_runs_past_its_share_is_read_run_by_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten pages whose layout takes half a minute: after its 1 s share the PDF is read without
    it, well within 8 s of CPU, every line there."""
    monkeypatch.setattr(isolated, "WORKER_CPU_S", 8)
    monkeypatch.setattr(isolated, "LAYOUT_CPU_S", 1)
    text = convert_isolated(spinning_pdf(), ".pdf", "spin.pdf")
    assert text.split().count("W" * 60) == 4000


def test_a_pdf_too_dense_for_layout_is_read_run_by_run_within_its_cpu_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The review's hostile PDF (2,000 overlapping lines on one page) ran the layout analysis for
    minutes: a page of that many text runs is read without it, run by run, well within 5 s."""
    monkeypatch.setattr(isolated, "WORKER_CPU_S", 5)
    text = convert_isolated(overlapping_lines_pdf(), ".pdf", "spin.pdf")
    assert text.split().count("W" * 60) == 2000


def test_owners_take_turns_at_a_busy_converter() -> None:
    """ann converts; her next file waits, then bob's: the freed slot goes to bob, whose turn
    it is, not to ann's file that waited longer."""
    turns = ConversionSlots(total=1, per_owner=1)
    taken: list[str] = []
    holding, release = threading.Event(), threading.Event()

    def convert(owner: str, hold: bool = False) -> None:
        with turns.taken(owner, 30, f"{owner}.pdf"):
            taken.append(owner)
            if hold:
                holding.set()
                release.wait(30)

    first = threading.Thread(target=convert, args=("ann", True))
    first.start()
    assert holding.wait(30)
    waiters = [threading.Thread(target=convert, args=(owner,)) for owner in ("ann", "bob")]
    for count, waiter in enumerate(waiters, 1):
        waiter.start()
        while len(turns._changed._waiters) < count:  # type: ignore[attr-defined]
            time.sleep(0.01)
    release.set()
    for thread in (first, *waiters):
        thread.join(30)
    assert taken == ["ann", "bob", "ann"]


def test_a_pdf_that_needs_more_memory_than_the_cap_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolated, "WORKER_MEMORY_BYTES", 400 << 20)
    stopped = r"needs more than 419430400 bytes of memory|could not be converted: the converter stopped \(past its 400 MiB"
    with pytest.raises(InvalidInputError, match=rf"'heavy\.pdf' ({stopped})"):
        convert_isolated(overlapping_lines_pdf(chars=1000), ".pdf", "heavy.pdf")


def test_a_pdf_whose_content_inflates_past_the_cap_is_refused_before_layout() -> None:
    data = pdf_of_one_page(b" " * (MAX_PDF_CONTENT_BYTES + 1))
    assert len(data) < 200_000
    with pytest.raises(InvalidInputError, match=r"'inflating\.pdf': its pages' content decompresses to more"):
        convert_isolated(data, ".pdf", "inflating.pdf")


def test_text_past_the_character_cap_is_refused_in_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    data = word_file("A sentence of a report. " * 20)
    assert "A sentence of a report." in convert_isolated(data, ".docx", "report.docx")
    monkeypatch.setattr(isolated, "MAX_TEXT_CHARS", 100)
    with pytest.raises(InvalidInputError, match=r"'report\.docx' converts to more than 100 characters"):
        convert_isolated(data, ".docx", "report.docx")


def test_conversions_wait_their_turn_and_a_user_has_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """While ann's hostile PDF runs, her next file waits its turn and is refused as busy when
    the wait runs out; bob's is converted, and ann's slot is free again once hers has stopped."""
    monkeypatch.setattr(isolated, "slots", ConversionSlots(total=2, per_owner=1))
    monkeypatch.setattr(isolated, "WORKER_CPU_S", 3)
    monkeypatch.setattr(isolated, "LAYOUT_CPU_S", 60)
    monkeypatch.setattr(isolated, "QUEUE_WAIT_S", 0.5)
    note = word_file("Bees keep the garden going.")
    failures: list[Exception] = []

    def spin() -> None:
        try:
            convert_isolated(spinning_pdf(), ".pdf", "spin.pdf", owner="ann")
        except InvalidInputError as exc:
            failures.append(exc)

    first = threading.Thread(target=spin)
    first.start()
    while not isolated.slots._running["ann"]:
        time.sleep(0.01)
    with pytest.raises(BusyError, match=r"'note\.docx' was not converted: the converter is busy"):
        convert_isolated(note, ".docx", "note.docx", owner="ann")
    assert "Bees keep the garden going." in convert_isolated(note, ".docx", "note.docx", owner="bob")
    first.join()
    assert "took more than 3s of CPU" in str(failures[0])
    assert "Bees keep the garden going." in convert_isolated(note, ".docx", "note.docx", owner="ann")
