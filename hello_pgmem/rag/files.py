"""Reading the files a caller names, optionally only beneath one folder (a files root).

Beneath a root, every file, named or found in a folder, must resolve to a place inside the root,
and is then opened one path component at a time from the root with ``O_NOFOLLOW``: a symbolic
link anywhere on the way, even one swapped in after the check, makes the open fail instead of
leaving the root. Errors name the path as the caller gave it, never the server's own paths.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from os import PathLike
from pathlib import Path

from hello_pgmem.core.errors import InvalidInputError

MAX_FILE_BYTES = 100 * 1024 * 1024

SYSTEM_TREES = frozenset(
    Path(name)
    for name in (
        "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media",
        "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/snap", "/srv", "/sys", "/tmp", "/usr",
        "/var",
    )
)  # fmt: skip
"""The system's own folders: never read as a whole."""


def too_wide(path: Path) -> str | None:
    """What a folder is when it holds too much of the machine to be read as a whole (the filesystem
    root, a system folder, the home folder), or None."""
    resolved = path.expanduser().resolve()
    if resolved == Path(resolved.anchor):
        return "the filesystem root"
    if resolved in SYSTEM_TREES:
        return "a system folder"
    if resolved == Path.home().resolve():
        return "the whole home folder"
    return None


def beneath(root: Path, path: Path) -> Path:
    """``path`` relative to ``root`` once resolved, or an error when it leads outside."""
    try:
        resolved = path.expanduser().resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise InvalidInputError("file_path", f"no such file: {str(path)!r}") from exc
    base = root.resolve()
    if not resolved.is_relative_to(base):
        raise InvalidInputError("file_path", f"{str(path)!r} is not inside the folder files may be read from")
    return resolved.relative_to(base)


def _open_beneath(root: Path, relative: Path) -> int:
    """A descriptor of ``root / relative`` opened without following any link."""
    directory = os.open(root.resolve(), os.O_RDONLY | os.O_DIRECTORY)
    try:
        *folders, name = relative.parts
        for folder in folders:
            inner = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=directory)
            os.close(directory)
            directory = inner
        return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
    finally:
        os.close(directory)


def read_file(path: Path, root: Path | None = None) -> bytes:
    """The bytes of a regular file of at most ``MAX_FILE_BYTES`` (beneath ``root`` when given)."""
    shown = str(path)
    try:
        if root is None:
            descriptor = os.open(path.expanduser(), os.O_RDONLY | os.O_NONBLOCK)
        else:
            relative = beneath(root, path)
            if not relative.parts:
                raise InvalidInputError("file_path", f"{shown!r} is not a regular file")
            descriptor = _open_beneath(root, relative)
    except FileNotFoundError as exc:
        raise InvalidInputError("file_path", f"no such file: {shown!r}") from exc
    except OSError as exc:
        raise InvalidInputError("file_path", f"cannot open {shown!r}: {exc.strerror}") from exc
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):  # before fdopen, which refuses a folder
        os.close(descriptor)
        raise InvalidInputError("file_path", f"{shown!r} is not a regular file")
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if info.st_size > MAX_FILE_BYTES:
            raise InvalidInputError("file_path", f"{path.name!r} is larger than {MAX_FILE_BYTES} bytes")
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise InvalidInputError("file_path", f"{path.name!r} is larger than {MAX_FILE_BYTES} bytes")
    return data


def path_list(paths: object) -> list[Path]:
    """``paths`` as a list of paths: a str or a Path is one path (never its characters), any other
    collection must hold only strs and Paths; anything else is refused, naming the field."""
    if isinstance(paths, str | PathLike):
        return [Path(paths)]
    rule = "must be a path, or a list of paths (str or pathlib.Path)"
    if isinstance(paths, bytes | bytearray | Mapping) or not isinstance(paths, Iterable):
        raise InvalidInputError("paths", f"{rule}, got {type(paths).__name__}")
    found = list(paths)
    for item in found:
        if not isinstance(item, str | PathLike):
            raise InvalidInputError("paths", f"{rule}; one item is a {type(item).__name__}")
        if "\x00" in str(item):
            raise InvalidInputError("paths", "a path must not hold a NUL character")
    return [Path(item) for item in found]
