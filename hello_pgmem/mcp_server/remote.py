"""What a remote caller may reach and see: files beneath its own folder of the server's
``--files-root``, and results without the server's own paths, database host, port or role names."""

from __future__ import annotations

import re
from pathlib import Path

_SERVER_DETAILS = [
    (re.compile(r'connection to server (?:at|on socket) "[^"]*"(?:, port \d+)?'), "the database connection"),
    (re.compile(r'\b(role|user|database|schema) "[^"]*"'), r"\1"),
    (re.compile(r"\b(host|hostaddr|port|user|dbname|password)=\S+"), r"\1=…"),
]


USER_FOLDER = re.compile(r"^[A-Za-z0-9_@][A-Za-z0-9._@-]{0,127}$")
"""A user id that can name a folder as it is (no separator, no leading period)."""


def user_root(files_root: Path, user_id: str) -> Path | None:
    """The folder ``user_id``'s file tools may read: ``files_root`` with its ``{user}`` replaced by
    the user id, or ``files_root/<user id>`` without one; None when the user id cannot name a
    folder, or the folder does not exist (the tools are then refused)."""
    if not USER_FOLDER.match(user_id):
        return None
    template = str(files_root)
    folder = Path(template.replace("{user}", user_id)) if "{user}" in template else files_root / user_id
    return folder if folder.is_dir() else None


def scrub(text: str, *roots: Path) -> str:
    """``text`` for a remote caller: paths below each of ``roots`` (the caller's own folder first)
    relative to it, and no database host, port, role or database name (they describe the
    deployment, not the caller's data)."""
    for root in roots:
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
