"""AgentMemorySystem: after each turn, extract, store without duplicates, decay, assemble context."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime
from functools import cached_property

from pydantic import BaseModel

from hello_pgmem.core.errors import LLMError
from hello_pgmem.core.models import DEFAULT_TYPES
from hello_pgmem.core.retry import retry_transient
from hello_pgmem.core.settings import Settings
from hello_pgmem.db import Database, SharesDatabase
from hello_pgmem.embedding import Embedder, create_embedder
from hello_pgmem.llm import ChatClient
from hello_pgmem.loop.assembler import MemoryAssembler
from hello_pgmem.loop.extractor import ExtractedMemory, MemoryExtractor
from hello_pgmem.loop.writer import Decision, LoopConfig, MemoryWriter
from hello_pgmem.memory import MemoryManager

__all__ = ["AgentMemorySystem", "TurnResult"]

log = logging.getLogger(__name__)


class TurnResult(BaseModel):
    """What one turn changed, and the context for the next one."""

    context: str
    decisions: list[Decision]
    evicted: int = 0
    error: str | None = None

    def __str__(self) -> str:
        return self.context


MAX_USERS = 256
"""How many users' memory objects the loop keeps ready (they hold no connection)."""


class AgentMemorySystem(SharesDatabase):
    """The long-term memory loop of an agent, for any number of users."""

    def __init__(
        self,
        llm: ChatClient,
        *,
        database: Database | None = None,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        config: LoopConfig | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.settings = settings or (database.settings if database else Settings())
        self.db, self._owns_db = Database.shared(database, self.settings)
        self.extractor = MemoryExtractor(llm, self.settings.language)
        self.config = config or LoopConfig()
        self.clock = clock
        self._embedder = embedder
        self._managers: OrderedDict[str, MemoryManager] = OrderedDict()  # the most recently used

    @cached_property
    def embedder(self) -> Embedder:
        """The embedder every user's memory shares (the settings' unless one was given)."""
        return self._embedder or create_embedder(self.settings)

    def manager(self, user_id: str) -> MemoryManager:
        """The memory of ``user_id``, on the loop's pool and embedder; the last ``MAX_USERS`` are kept."""
        if user_id in self._managers:
            self._managers.move_to_end(user_id)
        else:
            self._managers[user_id] = MemoryManager.of_types(
                user_id, DEFAULT_TYPES, database=self.db, embedder=self.embedder, clock=self.clock
            )
            while len(self._managers) > MAX_USERS:
                self._managers.popitem(last=False)
        return self._managers[user_id]

    @retry_transient
    def _store(self, manager: MemoryManager, extracted: list[ExtractedMemory]) -> tuple[list[Decision], int]:
        """A turn's memories and the decay after them, in one transaction."""
        writer = MemoryWriter(manager, self.config)
        return writer.write_turn(extracted, self.config.max_memories)

    def build_context(self, message: str, user_id: str, max_tokens: int = 1500) -> str:
        assembler = MemoryAssembler(
            self.manager(user_id),
            self.config.context_min_score,
            self.config.context_limit,
            language=self.settings.language,
        )
        return assembler.build_context(message, max_tokens)

    def process_turn(
        self, user_msg: str, assistant_msg: str, user_id: str, max_tokens: int = 1500
    ) -> TurnResult:
        """Remember what the turn taught, then return the context for the next turn.

        A failed or malformed extraction stores nothing; the context is still returned.
        """
        manager = self.manager(user_id)
        error = None
        try:
            extracted = self.extractor.extract(user_msg, assistant_msg)
        except LLMError as exc:
            log.warning("memory extraction failed, nothing stored for this turn: %s", exc)
            extracted, error = [], str(exc)
        decisions, evicted = self._store(manager, extracted)
        context = self.build_context(f"{user_msg}\n{assistant_msg}", user_id, max_tokens)
        return TurnResult(context=context, decisions=decisions, evicted=evicted, error=error)
