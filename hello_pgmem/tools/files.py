"""The files an agent's tools may read: only beneath a files root, because their file names come
from a model, which a prompt can steer. By default the root is the working directory; a tool
started in the filesystem root, a system folder or the home folder reads no file until it is
given one (``files_root=``, ``mcp --files-root``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.perceptual.encoders import infer_modality
from hello_pgmem.rag.files import beneath, too_wide

MAX_PATH_CHARS = 4096
"""The longest file name a tool takes (Linux's PATH_MAX)."""

FilesRoot = Path | Literal[False] | None
"""Where a tool may read files: a folder, False for nowhere, None for the default (:func:`files_root`)."""


def files_root(setting: FilesRoot) -> Path | None:
    """The folder a tool reads files beneath, or None when it reads none: the folder given, none
    for False, and by default the working directory, unless that is too wide a folder
    (:func:`too_wide`: then none, since a default must not open the whole machine)."""
    if setting is False:
        return None
    if setting is not None:
        return Path(setting).expanduser()
    here = Path.cwd()
    return None if too_wide(here) else here.resolve()


def confined(root: Path | None, path: str | Path, *also: Path) -> Path | None:
    """The file ``path`` names beneath ``root`` (a relative name looked for in ``root``, then in
    each folder of ``also`` that lies inside it), or None when there is no such file. An error
    naming ``file_path`` when the name leads outside the root (by ``..`` or a link), whether or not
    something is there, or when ``root`` is None (the tool reads no files)."""
    if root is None:
        raise InvalidInputError(
            "file_path", "reading files is off for this tool: give it a files root (files_root=)"
        )
    if not str(path).strip() or "\x00" in str(path):
        raise InvalidInputError("file_path", "must be a file name without NUL characters")
    if len(str(path)) > MAX_PATH_CHARS:
        raise InvalidInputError("file_path", f"must be at most {MAX_PATH_CHARS:,} characters")
    named = Path(path).expanduser()
    base = root.resolve()
    for place in [root] if named.is_absolute() else [root, *also]:
        try:
            resolved = (place / named).resolve()
        except (OSError, RuntimeError, ValueError):  # too long, a loop of links: no such file
            continue
        if not resolved.is_relative_to(base):
            if place is root:
                raise InvalidInputError(
                    "file_path", f"{str(path)[:200]!r} is not inside the folder files may be read from"
                )
            continue  # a folder of ``also`` outside the root is no place to look
        if _exists(resolved):
            beneath(root, resolved)
            return resolved
    return None


def _exists(path: Path) -> bool:
    """Whether ``path`` names something; False for a name the system refuses (a part too long)."""
    try:
        return path.exists()
    except OSError:
        return False


def media_metadata(
    memory_type: str, file_path: str | None, modality: str | None, root: Path | None
) -> dict[str, str]:
    """What an agent's perceptual memory says of its file: its path, found beneath ``root``, and
    its modality, given or inferred from the extension; ``file_path`` is refused for other types."""
    if memory_type != "perceptual":
        if file_path is not None:
            raise InvalidInputError("file_path", "only a perceptual memory reads a file")
        return {}
    described: dict[str, str] = {}
    if file_path:
        found = confined(root, file_path)
        if found is None:
            raise InvalidInputError("file_path", f"no such file: {file_path[:200]!r}")
        described["file_path"] = str(found)
    chosen = modality or (infer_modality(file_path) if file_path else "text")
    if chosen:
        described["modality"] = chosen
    return described
