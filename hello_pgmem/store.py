"""The one way in: ``hello_pgmem.connect()`` returns a :class:`Store`, whose methods hand out one
user's memory, one namespace's knowledge base, the long-term memory loop and the agent tools,
all sharing one connection pool, one embedder and one chat model.

    import hello_pgmem

    with hello_pgmem.connect() as store:          # DATABASE_URL, or the development server
        memory = store.memory("alice")
        memory.add_memory("Alice lives in Berlin", "semantic")
        memory.retrieve_memories("where does Alice live?")
        store.knowledge("handbook").add_text("# Leave\\n\\nTwenty-five days a year.")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from hello_pgmem.core.checks import check_flag
from hello_pgmem.core.models import DEFAULT_TYPES, MemoryConfig
from hello_pgmem.core.settings import Settings
from hello_pgmem.db import Database, SharesDatabase
from hello_pgmem.embedding import Embedder, create_embedder
from hello_pgmem.llm import ChatClient, create_chat_client

if TYPE_CHECKING:
    from hello_pgmem.embedding_queue import Scope
    from hello_pgmem.loop.system import AgentMemorySystem
    from hello_pgmem.loop.writer import LoopConfig
    from hello_pgmem.memory import MemoryManager
    from hello_pgmem.rag.knowledge import KnowledgeBase
    from hello_pgmem.tools.files import FilesRoot
    from hello_pgmem.tools.memory_tool import MemoryTool
    from hello_pgmem.tools.rag_tool import RAGTool


def connect(
    url: str | None = None,
    *,
    settings: Settings | None = None,
    embedder: Embedder | None = None,
    llm: ChatClient | None = None,
    embed: Literal["auto", "queue", "now"] | None = None,
) -> Store:
    """A :class:`Store` on ``url`` (else ``settings.database_url``, else ``DATABASE_URL``).

    Nothing is opened until first use; the schema must be migrated (``hello-pgmem migrate`` or
    :meth:`Store.migrate`). ``embed`` says when a write's vectors are made (``PGMEM_EMBED``):
    ``queue`` by the embedding workers after the write, ``now`` in the write, ``auto`` queued for
    every embedder but the hashing one.
    """
    base = settings or Settings()
    if url is not None:
        base = base.model_copy(update={"database_url": url})
    if embed is not None:
        base = base.model_copy(update={"embed": embed})
    return Store(base, embedder=embedder, llm=llm)


class Store(SharesDatabase):
    """A database with hello_pgmem's schema, and what every user and namespace share."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        database: Database | None = None,
        embedder: Embedder | None = None,
        llm: ChatClient | None = None,
    ) -> None:
        self.settings = settings or (database.settings if database else Settings())
        self.db, self._owns_db = Database.shared(database, self.settings)
        self._embedder = embedder
        self._llm = llm
        self._scopes: dict[Scope, None] = {}
        """The users and namespaces this store handed out, in order: what its waits wait for."""

    @cached_property
    def embedder(self) -> Embedder:
        """The embedder the settings choose (``EMBED_MODEL_TYPE``), made once."""
        return self._embedder or create_embedder(self.settings)

    @cached_property
    def llm(self) -> ChatClient | None:
        """The chat model of ``LLM_MODEL_ID``, or None when none is configured."""
        return self._llm or create_chat_client(self.settings)

    def migrate(self) -> None:
        """Create or upgrade the schema (idempotent), in one transaction."""
        from hello_pgmem.ops.migrate import upgrade

        upgrade(self.settings)

    def memory(
        self,
        user_id: str,
        session_id: str | None = None,
        *,
        types: Sequence[str] = DEFAULT_TYPES,
        config: MemoryConfig | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> MemoryManager:
        """The memories of ``user_id`` (working memory of ``session_id``) of the given types."""
        from hello_pgmem.memory import MemoryManager

        manager = MemoryManager.of_types(
            user_id,
            types,
            config=config,
            database=self.db,
            embedder=self.embedder,
            session_id=session_id,
            clock=clock,
        )
        self._scopes[("memory", manager.user_id)] = None
        return manager

    def knowledge(self, namespace: str = "default", **options: Any) -> KnowledgeBase:
        """The documents of ``namespace`` (options: ``batch_size``, ``fusion``)."""
        from hello_pgmem.rag.knowledge import KnowledgeBase

        kb = KnowledgeBase(self.db, self.embedder, namespace, llm=self.llm, **options)
        self._scopes[("chunk", kb.namespace)] = None
        return kb

    def loop(self, llm: ChatClient | None = None, config: LoopConfig | None = None) -> AgentMemorySystem:
        """The long-term memory loop (extraction after each turn) with ``llm`` or the configured one."""
        from hello_pgmem.core.errors import ConfigurationError
        from hello_pgmem.loop.system import AgentMemorySystem

        chat = llm or self.llm
        if chat is None:
            raise ConfigurationError("the memory loop needs a chat model: set LLM_MODEL_ID or pass llm=")
        return AgentMemorySystem(chat, database=self.db, embedder=self.embedder, config=config)

    def memory_tool(
        self,
        user_id: str,
        *,
        types: Sequence[str] = DEFAULT_TYPES,
        session_id: str | None = None,
        expandable: bool = False,
        clock: Callable[[], datetime] | None = None,
        files_root: FilesRoot = None,
    ) -> MemoryTool:
        """The agent-facing ``memory`` tool of ``user_id``, working through :meth:`memory`;
        ``files_root`` is the folder its perceptual memories' files are read beneath (by default
        the working directory, none when False)."""
        from hello_pgmem.tools.memory_tool import MemoryTool, new_session_id

        session = session_id or new_session_id(clock)
        manager = self.memory(user_id, session, types=types, clock=clock)
        return MemoryTool(manager=manager, expandable=expandable, files_root=files_root)

    def rag_tool(
        self,
        namespace: str = "default",
        *,
        namespaces: Sequence[str] | None = None,
        expandable: bool = False,
        asked_by: str | None = None,
        files_root: FilesRoot = None,
    ) -> RAGTool:
        """The agent-facing ``rag`` tool of ``namespace`` (limited to ``namespaces``, by default
        that one); ``asked_by`` files its questions under a user; the tool reads files only
        beneath ``files_root`` (by default the working directory, none when False)."""
        from hello_pgmem.tools.rag_tool import RAGTool

        tool = RAGTool(
            rag_namespace=namespace,
            expandable=expandable,
            database=self.db,
            embedder=self.embedder,
            llm=self.llm,
            namespaces=list(namespaces or [namespace]),
            user_id=asked_by,
            files_root=files_root,
        )
        self._scopes.update(dict.fromkeys(("chunk", name) for name in sorted(tool.namespaces or ())))
        return tool

    def wait_for_embeddings(
        self,
        timeout: float | None = None,
        *,
        everyone: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Embed the queued memories and chunks of the users and namespaces this store handed out
        (:meth:`memory`, :meth:`knowledge`, the tools), or of every one with ``everyone``, in the
        calling thread, waiting for those other workers hold, until none waits; how many it
        embedded. ``progress(done, left)`` as it goes; past ``timeout`` seconds an EmbeddingError
        says how many still wait and why."""
        from hello_pgmem.embedding_queue import wait_for_embeddings

        everyone = check_flag(everyone, "everyone")
        if not everyone and not self._scopes:
            return 0
        self.db.ensure_embedding_model(self.embedder.model_name, self.embedder.dimension)
        scopes = None if everyone else list(self._scopes)
        return wait_for_embeddings(self.db, self.embedder, scopes, timeout=timeout, progress=progress)

    def __repr__(self) -> str:
        return f"Store(schema={self.settings.schema_name!r})"
