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
from tests.media import overlapping_lines_pdf, pdf_of_one_page

pytestmark = pytest.mark.slow


def word_file(text: str) -> bytes:
    document = docx.Document()
    document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_a_pdf_that_spins_the_layout_stops_at_its_cpu_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolated, "WORKER_CPU_S", 2)
    with pytest.raises(InvalidInputError, match=r"'spin\.pdf' took more than 2s of CPU to convert"):
        convert_isolated(overlapping_lines_pdf(), ".pdf", "spin.pdf")


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
    monkeypatch.setattr(isolated, "QUEUE_WAIT_S", 0.5)
    note = word_file("Bees keep the garden going.")
    failures: list[Exception] = []

    def spin() -> None:
        try:
            convert_isolated(overlapping_lines_pdf(), ".pdf", "spin.pdf", owner="ann")
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
