"""A LangGraph long-term store backed by hello_pgmem (``pip install 'hello-pgmem[langgraph]'``).

``PgMemStore`` is a ``langgraph.store.base.BaseStore``: ``put``, ``get``, ``delete``, ``search``
(a natural-language query ranked by hello_pgmem's hybrid search, and value filters),
``list_namespaces`` and ``batch``, sync and async. Each item is an episodic memory of the
store's user, so it is embedded, searched, decayed, exported and erased like any other memory,
and every statement runs scoped to that user by row-level security. An item's id is derived
from its namespace and key (one row per key); its value lives in the memory's metadata, its
text (the ``index`` fields, else the whole value as JSON) in the memory's content.

Filters: ``{"field": value}`` matches values that contain it (JSON containment, in SQL), and
``{"field": {"$eq"|"$ne"|"$gt"|"$gte"|"$lt"|"$lte": value}}`` compares (in Python, after SQL).
TTL is not supported.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
)
from psycopg.types.json import Jsonb

from hello_pgmem.memory import queries as q
from hello_pgmem.memory.manager import MemoryManager

ID_SPACE = uuid.UUID("5f0c6a3e-9c5b-4d64-a1f4-2b7e3c1d8a90")
OPERATORS = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def item_id(namespace: Sequence[str], key: str) -> uuid.UUID:
    return uuid.uuid5(ID_SPACE, json.dumps([list(namespace), key], ensure_ascii=False))


def namespace_path(namespace: Sequence[str]) -> str:
    """The session_id of a namespace's items: a prefix of it is the path of a namespace prefix."""
    return "lg." + "".join(f"{label}." for label in namespace)


def like_prefix(namespace: Sequence[str]) -> str:
    path = namespace_path(namespace)
    return path.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def split_filter(conditions: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Equality conditions (for SQL containment) and operator conditions (checked in Python)."""
    equal: dict[str, Any] = {}
    compared: dict[str, dict[str, Any]] = {}
    for field, condition in (conditions or {}).items():
        if isinstance(condition, dict) and condition and all(k in OPERATORS for k in condition):
            compared[field] = condition
        else:
            equal[field] = condition
    return equal, compared


def passes(value: dict[str, Any], compared: dict[str, dict[str, Any]]) -> bool:
    for field, condition in compared.items():
        if field not in value:
            return False
        for operator, operand in condition.items():
            try:
                if not OPERATORS[operator](value[field], operand):
                    return False
            except TypeError:
                return False
    return True


class PgMemStore(BaseStore):
    """A LangGraph store whose items are the long-term memories of one hello_pgmem user.

    ``index``: the value fields whose text is embedded and searched (LangGraph's ``IndexConfig``
    ``fields``; default: the whole value). Items put with ``index=False`` keep their JSON as text.
    """

    supports_ttl = False

    def __init__(self, memory: MemoryManager, index: Sequence[str] | None = None) -> None:
        self.memory = memory
        self.fields = list(index) if index else ["$"]

    # ------------------------------------------------------------------ batch

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op.namespace, op.key))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._namespaces(op))
            else:
                raise TypeError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # ------------------------------------------------------------------ operations

    def _text(self, value: dict[str, Any], index: list[str] | None) -> str:
        fields = self.fields if index is None else index
        pieces = [
            text
            for field in fields
            for text in (
                [json.dumps(value, ensure_ascii=False)] if field == "$" else get_text_at_path(value, field)
            )
        ]
        return "\n".join(p for p in pieces if p.strip()) or json.dumps(value, ensure_ascii=False)

    def _put(self, op: PutOp) -> None:
        memory_id = item_id(op.namespace, op.key)
        if op.value is None:
            self.memory.remove_memory(memory_id)
            return
        index = None if op.index is None else ([] if op.index is False else list(op.index))
        content = self._text(dict(op.value), index) if op.index is not False else json.dumps(op.value)
        stored = {
            "langgraph": {"namespace": list(op.namespace), "key": op.key, "value": dict(op.value)},
            "session_id": namespace_path(op.namespace),
        }
        if self.memory.update_memory(memory_id, content=content, metadata={"langgraph": stored["langgraph"]}):
            return
        episodic = self.memory.episodic
        item = self.memory.parts.new_item(content, "episodic", 0.5, stored, self.memory.clock())
        episodic.add_many([item.model_copy(update={"id": memory_id})])

    def _rows_to_items(self, rows: Sequence[Sequence[Any]]) -> list[Item]:
        return [
            Item(
                value=row[1]["value"],
                key=row[1]["key"],
                namespace=tuple(row[1]["namespace"]),
                created_at=row[2],
                updated_at=row[3],
            )
            for row in rows
        ]

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        params = {"user_id": self.memory.user_id, "ids": [item_id(namespace, key)]}
        with self.memory.transaction() as conn:
            rows = conn.execute(q.STORE_GET, params).fetchall()
        items = self._rows_to_items(rows)
        return items[0] if items else None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        equal, compared = split_filter(op.filter)
        window = op.limit + op.offset if compared else op.limit  # compared filters thin the rows
        params: dict[str, Any] = {
            "user_id": self.memory.user_id,
            "prefix": like_prefix(op.namespace_prefix),
            "filter": Jsonb(equal),
            "limit": window if compared else op.limit,
            "offset": 0 if compared else op.offset,
        }
        if op.query:
            embedder = self.memory.parts.registered_embedder
            params.update(
                model=embedder.model_name,
                query=embedder.encode_one(op.query),
                query_text=op.query,
                pool=min(1000, max(50, (op.limit + op.offset) * 10)),
            )
            statement = q.STORE_SEARCH
        else:
            statement = q.STORE_ITEMS
        if compared:
            params["limit"] = None  # all rows, then compare, then the window
        with self.memory.transaction() as conn:
            rows = conn.execute(statement, params).fetchall()
        found = [
            SearchItem(
                namespace=tuple(row[1]["namespace"]),
                key=row[1]["key"],
                value=row[1]["value"],
                created_at=row[2],
                updated_at=row[3],
                score=float(row[4]) if op.query else None,
            )
            for row in rows
            if passes(row[1]["value"], compared)
        ]
        return found[op.offset : op.offset + op.limit] if compared else found

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        with self.memory.transaction() as conn:
            rows = conn.execute(q.STORE_NAMESPACES, {"user_id": self.memory.user_id}).fetchall()
        namespaces = {tuple(row[0]) for row in rows}
        for condition in op.match_conditions or ():
            path = tuple(condition.path)

            def matches(
                ns: tuple[str, ...], path: tuple[str, ...] = path, kind: str = condition.match_type
            ) -> bool:
                part = ns[: len(path)] if kind == "prefix" else ns[len(ns) - len(path) :]
                return len(ns) >= len(path) and all(p in ("*", n) for p, n in zip(path, part, strict=True))

            namespaces = {ns for ns in namespaces if matches(ns)}
        if op.max_depth is not None:
            namespaces = {ns[: op.max_depth] for ns in namespaces}
        return sorted(namespaces)[op.offset : op.offset + op.limit]
