"""Finding memories of :class:`~hello_pgmem.memory.MemoryManager`'s user by id: one memory, whether
it exists, the memory a typed id or prefix names, by a metadata value, and a memory's versions.
Each returns what it found, None or [] when nothing: never an error for a row that is not there."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from uuid import UUID

from hello_pgmem.core.checks import check_flag
from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import MemoryItem
from hello_pgmem.db import Conn
from hello_pgmem.memory import _ids, _versions
from hello_pgmem.memory._parts import MemoryParts
from hello_pgmem.memory._versions import MemoryVersion


class Lookups:
    """What a manager finds by id."""

    user_id: str
    _parts: MemoryParts
    transaction: Callable[[], AbstractContextManager[Conn]]

    def get_memory(self, memory_id: UUID | str) -> MemoryItem | None:
        with self.transaction() as conn:
            return _ids.get(conn, self._parts.working, _ids.as_uuid(memory_id))

    def has_memory(self, memory_id: UUID | str) -> bool:
        try:
            uid = _ids.as_uuid(memory_id)
        except InvalidInputError:
            return False
        with self.transaction() as conn:
            return _ids.locate(conn, self._parts.working, uid) is not None

    def resolve_id(self, text: str, *, forgotten: bool = False) -> UUID | None:
        """The memory a full id or an unambiguous prefix of at least 8 characters names among this
        user's memories (``forgotten``: among those forgotten), or None."""
        with self.transaction() as conn:
            return _ids.resolve(conn, self._parts.working, text, check_flag(forgotten, "forgotten"))

    def find_by_metadata(self, key: str, value: str) -> list[UUID]:
        """Ids of this user's live long-term memories whose ``metadata[key]`` equals ``value``."""
        with self.transaction() as conn:
            return _ids.find_by_metadata(conn, self.user_id, key, value)

    def memory_history(self, memory_id: UUID | str) -> list[MemoryVersion]:
        """Every version of a long-term memory (``memory_id``: its id, or an earlier version's),
        oldest recorded first, the memory itself among them; [] for an unknown id."""
        with self.transaction() as conn:
            found = _ids.memory_of(conn, self.user_id, _ids.as_uuid(memory_id))
            return _versions.history(conn, self.user_id, found)
