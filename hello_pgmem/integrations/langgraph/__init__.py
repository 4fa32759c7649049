"""A LangGraph long-term store backed by hello_pgmem (``pip install 'hello-pgmem[langgraph]'``):
:class:`PgMemStore`, in ``store``; its filters as SQL, in ``filters``."""

from hello_pgmem.integrations.langgraph.store import PgMemStore, item_id, namespace_path

__all__ = ["PgMemStore", "item_id", "namespace_path"]
