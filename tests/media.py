"""Media files made by the tests: images with Pillow, WAV files with numpy, hostile PDFs by hand."""

from __future__ import annotations

import wave
import zlib
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw


def sunset(path: Path, size: tuple[int, int] = (320, 240)) -> Path:
    """An orange-to-purple gradient with a yellow sun."""
    width, height = size
    y = np.linspace(0, 1, height)[:, None]
    pixels = np.zeros((height, width, 3), dtype=np.uint8)
    pixels[..., 0] = (255 * (1 - 0.4 * y)).astype(np.uint8)
    pixels[..., 1] = (140 * (1 - y)).astype(np.uint8)
    pixels[..., 2] = (60 + 120 * y).astype(np.uint8)
    image = Image.fromarray(pixels)
    ImageDraw.Draw(image).ellipse(
        (width * 0.4, height * 0.5, width * 0.6, height * 0.75), fill=(255, 220, 40)
    )
    image.save(path)
    return path


def forest(path: Path, size: tuple[int, int] = (320, 240)) -> Path:
    """Green vertical stripes on dark brown."""
    width, height = size
    image = Image.new("RGB", size, (60, 40, 20))
    draw = ImageDraw.Draw(image)
    for x in range(0, width, 24):
        draw.rectangle((x, 0, x + 12, height), fill=(30, 140 + x % 80, 40))
    image.save(path)
    return path


def resized(source: Path, path: Path, size: tuple[int, int]) -> Path:
    with Image.open(source) as image:
        image.convert("RGB").resize(size).save(path, quality=85)
    return path


def tone(path: Path, frequency: float, seconds: float = 1.0, rate: int = 16000, noise: float = 0.0) -> Path:
    t = np.arange(int(seconds * rate)) / rate
    signal = 0.5 * np.sin(2 * np.pi * frequency * t)
    if noise:
        signal += noise * np.random.default_rng(1).normal(size=t.shape)
    samples = (np.clip(signal, -1, 1) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(samples.tobytes())
    return path


def pdf_of_one_page(content: bytes) -> bytes:
    """A one-page PDF (Helvetica as F1) drawn by ``content``, compressed as one Flate stream."""
    return pdf_of_pages(content, 1)


def pdf_of_pages(content: bytes, pages: int) -> bytes:
    """A PDF of ``pages`` pages (Helvetica as F1), each drawn by ``content``, compressed as one
    Flate stream that every page shares."""
    packed = zlib.compress(content, 9)
    first_page = 5
    kids = b" ".join(b"%d 0 R" % (first_page + n) for n in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    objects += [
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R"
        b" /Resources << /Font << /F1 4 0 R >> >> >>"
    ] * pages
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def overlapping_lines_pdf(lines: int = 2000, chars: int = 60, pages: int = 1) -> bytes:
    """The review's hostile PDF: ``lines`` lines of text drawn on one spot of each page, a kilobyte
    or so packed, which pdfminer's layout analysis compares with each other for minutes."""
    line = b"BT /F1 9 Tf 10 700 Td (" + b"W" * chars + b") Tj ET\n"
    return pdf_of_pages(line * lines, pages)


def spinning_pdf() -> bytes:
    """Ten pages of 400 overlapping lines: each page is sparse enough for the layout analysis,
    which spends seconds on each (half a minute or so in all)."""
    return overlapping_lines_pdf(lines=400, pages=10)
