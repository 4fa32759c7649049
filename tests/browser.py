"""A real headless browser for the web view's tests and its screenshots: Debian's Chromium
(``/usr/bin/chromium``, or ``PGMEM_CHROMIUM``) driven by Playwright; no browser is downloaded."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Browser, sync_playwright

# Without the background-networking flags Chromium keeps trying hosts this closed network refuses.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def chromium_path() -> str:
    """The system Chromium; a clear error when it is missing (scripts/install-browser installs it)."""
    path = os.environ.get("PGMEM_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(path):
        raise RuntimeError(
            "the web view's tests need Debian's chromium package: run scripts/install-browser "
            "(apt-get install chromium), or set PGMEM_CHROMIUM to a Chromium binary"
        )
    return path


@contextmanager
def chromium() -> Iterator[Browser]:
    """Headless Chromium with a fresh profile, closed on exit."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()
