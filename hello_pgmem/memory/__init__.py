"""One user's memory: :class:`MemoryManager` and the values it takes and returns.

Everything else in this package is private (``_module.py``). Other layers import from here: the
manager, a search (:class:`MemorySearch`) and what it sends (:class:`SearchSQL`), sessions
(:class:`SessionHit`), versions (:class:`MemoryVersion`, :class:`Change`), the loop's work inside
a transaction (:class:`InTransaction`, :class:`Neighbour`), the LangGraph store's items
(:class:`ItemStore`), and the functions the maintenance job, erasure, export, re-embedding and
the graph rebuild apply to the tables.
"""

from hello_pgmem.memory._classify import classify, estimate_importance
from hello_pgmem.memory._decay import apply_decay
from hello_pgmem.memory._in_transaction import InTransaction, Neighbour
from hello_pgmem.memory._items import Expiry, ItemStore, sweep_expired
from hello_pgmem.memory._reembed import reembed
from hello_pgmem.memory._search_request import MemorySearch
from hello_pgmem.memory._search_sql import SearchSQL
from hello_pgmem.memory._sessions import SessionHit
from hello_pgmem.memory._table import (
    erase_user,
    expire_working,
    fold_accesses,
    forgotten_before,
    purge,
    semantic_ids,
    semantic_users,
    users_over,
)
from hello_pgmem.memory._versions import Change, MemoryVersion, history
from hello_pgmem.memory._when import time_range
from hello_pgmem.memory.manager import MemoryManager

__all__ = [
    "Change",
    "Expiry",
    "InTransaction",
    "ItemStore",
    "MemoryManager",
    "MemorySearch",
    "MemoryVersion",
    "Neighbour",
    "SearchSQL",
    "SessionHit",
    "apply_decay",
    "classify",
    "erase_user",
    "estimate_importance",
    "expire_working",
    "fold_accesses",
    "forgotten_before",
    "history",
    "purge",
    "reembed",
    "semantic_ids",
    "semantic_users",
    "sweep_expired",
    "time_range",
    "users_over",
]
