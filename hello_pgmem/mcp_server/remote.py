"""What a remote caller may reach and see: files beneath the server's ``--files-root``, and
results without the server's own paths, database host, port or role names."""

from __future__ import annotations

import re
from pathlib import Path

_SERVER_DETAILS = [
    (re.compile(r'connection to server (?:at|on socket) "[^"]*"(?:, port \d+)?'), "the database connection"),
    (re.compile(r'\b(role|user|database|schema) "[^"]*"'), r"\1"),
    (re.compile(r"\b(host|hostaddr|port|user|dbname|password)=\S+"), r"\1=…"),
]


def scrub(text: str, root: Path | None) -> str:
    """``text`` for a remote caller: paths below ``root`` relative to it, and no database host,
    port, role or database name (they describe the deployment, not the caller's data)."""
    if root is not None:
        for prefix in {str(root.resolve()), str(root)}:
            text = text.replace(prefix.rstrip("/") + "/", "")
    for pattern, replacement in _SERVER_DETAILS:
        text = pattern.sub(replacement, text)
    return text


def inside(root: Path, path: str) -> bool:
    """Whether ``path`` (relative ones under ``root``) resolves to a place under ``root``, symbolic
    links followed: the quick refusal. Reading checks every file again, folders' too, and opens
    it without following links (:mod:`hello_pgmem.rag.files`)."""
    try:
        return (root / Path(path).expanduser()).resolve().is_relative_to(root.resolve())
    except (OSError, ValueError):
        return False
