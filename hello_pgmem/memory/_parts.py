"""The parts of one user's memory, each made on first use: the embedder (registered with the
database once), the extractor, the knowledge graph and the four memory types."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import cached_property
from typing import Any

from hello_pgmem import embedding_queue
from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import MemoryConfig, MemoryItem, MemoryType, check_importance
from hello_pgmem.core.settings import Settings
from hello_pgmem.db import Database
from hello_pgmem.embedding import Embedder, create_embedder
from hello_pgmem.graph.extracted import Extractor
from hello_pgmem.graph.extraction import create_extractor
from hello_pgmem.graph.projection import AgeProjection
from hello_pgmem.graph.store import GraphStore
from hello_pgmem.llm import create_chat_client
from hello_pgmem.llm.rerank import Reranker, create_reranker
from hello_pgmem.memory._classify import estimate_importance
from hello_pgmem.memory._episodic import EpisodicMemory
from hello_pgmem.memory._longterm import LongTermMemory
from hello_pgmem.memory._perceptual import PerceptualMemory
from hello_pgmem.memory._semantic import SemanticMemory
from hello_pgmem.memory._working import WorkingMemory
from hello_pgmem.perceptual.encoders import MediaEncoder, default_encoders

Store = WorkingMemory | EpisodicMemory | SemanticMemory | PerceptualMemory


class MemoryParts:
    """Everything one user's MemoryManager works through; nothing is made before it is used."""

    def __init__(
        self,
        db: Database,
        settings: Settings,
        config: MemoryConfig,
        user_id: str,
        *,
        session_id: str | None,
        clock: Callable[[], datetime],
        embedder: Embedder | None = None,
        extractor: Extractor | None = None,
        encoders: Mapping[str, MediaEncoder] | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.config = config
        self.user_id = user_id
        self.session_id = session_id
        self.clock = clock
        self._embedder = embedder
        self._extractor = extractor
        self._encoders = encoders

    @cached_property
    def embedder(self) -> Embedder:
        """The text embedder (made from the settings unless one was given)."""
        return self._embedder or create_embedder(self.settings)

    @cached_property
    def registered_embedder(self) -> Embedder:
        """The text embedder, its model registered with the database (indexes and all), once."""
        self.db.ensure_embedding_model(self.embedder.model_name, self.embedder.dimension)
        return self.embedder

    @cached_property
    def embeds_now(self) -> bool:
        """Whether writes embed their texts themselves (``PGMEM_EMBED``: now; auto with an embedder
        that takes microseconds; always on a Citus cluster) or queue them for the workers."""
        return embedding_queue.embeds_in_write(self.db, self.embedder)

    def queued(self) -> None:
        """A write of this user queued rows: the process's workers embed them."""
        embedding_queue.queued(self.db, self.registered_embedder)

    @cached_property
    def reranker(self) -> Reranker | None:
        """The second stage of a search, when RERANK_BASE_URL names one."""
        return create_reranker(self.settings)

    @cached_property
    def extractor(self) -> Extractor:
        return self._extractor or create_extractor(create_chat_client(self.settings), self.settings.language)

    @cached_property
    def graph(self) -> GraphStore:
        """The user's knowledge graph (projected into AGE when the graph exists)."""
        projection = AgeProjection(self.settings.graph_name) if self.db.graph_enabled else None
        return GraphStore(self.user_id, projection)

    @cached_property
    def working(self) -> WorkingMemory:
        return WorkingMemory(self.db, self.user_id, self.config, session_id=self.session_id, clock=self.clock)

    def _long_term(self) -> dict[str, Any]:
        return {
            "clock": self.clock,
            "max_capacity": self.config.max_capacity,
            "embeds_now": self.embeds_now,
            "queued": self.queued,
        }

    @cached_property
    def episodic(self) -> EpisodicMemory:
        return EpisodicMemory(self.db, self.registered_embedder, self.user_id, **self._long_term())

    @cached_property
    def semantic(self) -> SemanticMemory:
        return SemanticMemory(
            self.db,
            self.registered_embedder,
            self.user_id,
            extractor=self.extractor,
            graph=self.graph,
            **self._long_term(),
        )

    @cached_property
    def perceptual(self) -> PerceptualMemory:
        encoders = self._encoders if self._encoders is not None else default_encoders()
        return PerceptualMemory(
            self.db,
            self.registered_embedder,
            self.user_id,
            encoders=encoders,
            modalities=self.config.perceptual_memory_modalities,
            **{**self._long_term(), "embeds_now": True},  # it reads and encodes its file in the write
        )

    def new_item(
        self,
        content: str,
        kind: MemoryType,
        importance: float | None,
        meta: dict[str, Any],
        now: datetime,
        session_id: str | None = None,
    ) -> MemoryItem:
        """A new memory of this user, in ``session_id`` (this manager's session by default);
        importance estimated when not given."""
        value = estimate_importance(content, meta) if importance is None else check_importance(importance)
        return MemoryItem.build(
            self.config.max_content_chars,
            content=content,
            memory_type=kind,
            user_id=self.user_id,
            timestamp=now,
            importance=value,
            metadata=meta,
            session_id=self.session_id if session_id is None else session_id,
        )

    def of_type(self, memory_type: MemoryType) -> Store:
        """The object holding ``memory_type``."""
        if memory_type == "working":
            return self.working
        if memory_type == "episodic":
            return self.episodic
        return self.semantic if memory_type == "semantic" else self.perceptual

    def of_enabled(self, memory_type: str, enabled: Sequence[MemoryType]) -> Store:
        """The object holding ``memory_type``, which must be one of ``enabled``."""
        if memory_type not in enabled:
            raise InvalidInputError(
                "memory_type", f"{memory_type!r} is not enabled (enabled: {', '.join(enabled)})"
            )
        return self.of_type(memory_type)  # type: ignore[arg-type]

    def long_term(self, memory_type: str) -> LongTermMemory:
        """The object of a long-term type (episodic, semantic or perceptual)."""
        store = self.of_type(memory_type)  # type: ignore[arg-type]
        assert isinstance(store, LongTermMemory), memory_type
        return store
