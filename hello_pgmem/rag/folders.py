"""Which files an ingest of folders reads: never the whole system, and never more than a budget.

A folder ingest walks what it is given. ``ingest /`` as root would store ``/etc/shadow`` with the
rest of the disk, so the filesystem root, the system's own trees (``/etc``, ``/usr``, ``/proc``,
…), ``/home`` and the user's home folder as a whole are refused by name, and nothing beneath
``/proc``, ``/sys``, ``/dev`` or ``/run`` is read at all. Every other walk stops at a budget of
files and bytes (:data:`MAX_FILES`, :data:`MAX_BYTES`): the whole list is made and counted before
the first file is stored, so a refused ingest writes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from hello_pgmem.core.deadline import check_deadline
from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.rag.files import beneath, path_list, too_wide

MAX_FILES = 5_000
"""Files one ingest call reads at most (``max_files=``, ``--max-files``)."""
MAX_BYTES = 500 * 1024 * 1024
"""Bytes of files one ingest call reads at most (``max_bytes=``, ``--max-bytes``)."""

PSEUDO_TREES = (Path("/proc"), Path("/sys"), Path("/dev"), Path("/run"))
"""Trees of the kernel's and the running system's state: nothing beneath them is a document."""


def refusal(path: Path) -> str | None:
    """Why an ingest may not read ``path`` (a folder or a file, as named), or None."""
    resolved = path.expanduser().resolve()
    if any(resolved.is_relative_to(tree) for tree in PSEUDO_TREES):
        return f"{str(path)!r} is part of the running system's state, not a document"
    wide = too_wide(resolved) if resolved.is_dir() else None
    if wide:
        return f"{str(path)!r} is {wide}: name the folder that holds the documents"
    return None


def planned_files(
    paths: object, root: Path | None = None, *, max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES
) -> list[Path]:
    """Every file an ingest of ``paths`` (one path or a list, :func:`path_list`) reads, counted
    against the budget before any is read; an error naming the path or the limit otherwise."""
    for name, value in (("max_files", max_files), ("max_bytes", max_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidInputError(name, f"must be a positive integer, got {value!r}")
    named = path_list(paths)
    for path in named:
        why = refusal(path)
        if why:
            raise InvalidInputError("paths", why)
    files: list[Path] = []
    size = 0
    for path in _walk(named, root, folder_budget=max_files):
        files.append(path)
        if len(files) > max_files:
            raise InvalidInputError(
                "paths",
                f"hold more than {max_files} files, the limit of one ingest: name a smaller folder, "
                "or raise max_files (--max-files)",
            )
        size += _size(path)
        if size > max_bytes:
            raise InvalidInputError(
                "paths",
                f"hold more than {max_bytes} bytes, the limit of one ingest: name a smaller folder, "
                "or raise max_bytes (--max-bytes)",
            )
    return files


def _size(path: Path) -> int:
    """The bytes of a regular file (0 for what is not one, or is gone: reading it reports that)."""
    try:
        return path.lstat().st_size if path.is_file() and not path.is_symlink() else 0
    except OSError:
        return 0


def _walk(paths: list[Path], root: Path | None, folder_budget: int) -> Iterator[Path]:
    """Files named, and every file below folders named (links not followed into folders; names
    that start with a period, such as ``.git``, not walked; at most ``folder_budget`` folders);
    beneath ``root`` each is checked again when it is read."""
    folders = 0
    for item in paths:
        path = item.expanduser()
        if root is not None:
            beneath(root, path)  # a named folder outside the root is refused before its walk
        if not path.is_dir() or path.is_symlink():
            yield path
            continue
        for folder, subfolders, files in os.walk(path, followlinks=False):
            check_deadline()
            folders += 1
            if folders > folder_budget:
                raise InvalidInputError(
                    "paths",
                    f"hold more than {folder_budget} folders, the limit of one ingest: name a smaller "
                    "folder, or raise max_files (--max-files)",
                )
            subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
            for name in sorted(files):
                if not name.startswith("."):
                    yield Path(folder) / name
