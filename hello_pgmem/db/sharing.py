"""What uses a Database, given or the process's own: ``close`` gives back its share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from hello_pgmem.db.database import Database


class SharesDatabase:
    """Something that uses a Database, given or its own: ``close`` closes it only when it is its
    own, and ``with`` closes it at the end."""

    db: Database
    _owns_db: bool

    def close(self) -> None:
        """Give back this object's share of the process's pool (closed with the last share); a
        Database that was given to it stays open."""
        if self._owns_db:
            self._owns_db = False
            self.db.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
