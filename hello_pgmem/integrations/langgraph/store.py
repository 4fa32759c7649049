"""``PgMemStore``: a LangGraph ``BaseStore`` whose items are the episodic memories of one user.

Each item is one row: its id is derived from its namespace and key, its value lives in the
memory's metadata (``langgraph``), its text (the ``index`` fields, else the whole value as JSON)
in the memory's content, embedded and searched like any other memory. A put is one statement
(``INSERT … ON CONFLICT DO UPDATE``): concurrent puts of a key end in one whole item, and a put
of a forgotten item brings it back as new. A query search ranks with the hybrid search, with the
namespace and the filter applied inside its candidate scans (``filters``); items put with
``index=False`` are left out of it, as LangGraph's stores do. An item put with a ``ttl`` (or the
store's ``TTLConfig`` ``default_ttl``) expires that many minutes later, or after a read that
refreshes it (``refresh_ttl``, by default ``refresh_on_read``); reads leave expired items out when
``omit_expired`` is set, and a sweep (``sweep_ttl``, ``start_ttl_sweeper``, ``hello-pgmem
maintain``) forgets them (ttl.py). A put keeps
the value it replaces and a delete the value it removes as earlier versions, so a store made with
``known_at`` reads the items as they were then (docs/temporal.md).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    validate_op_namespace,
)

from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import check_content, check_metadata, check_timestamp
from hello_pgmem.integrations.langgraph.filters import compile_filter
from hello_pgmem.integrations.langgraph.ttl import Sweeper
from hello_pgmem.memory import Expiry, MemoryManager, estimate_importance

ID_SPACE = uuid.UUID("5f0c6a3e-9c5b-4d64-a1f4-2b7e3c1d8a90")
MAX_QUERY_WINDOW = 1000
"""A query search ranks at most this many items (``limit + offset``), as the memory search does."""


def item_id(namespace: Sequence[str], key: str) -> uuid.UUID:
    return uuid.uuid5(ID_SPACE, json.dumps([list(namespace), key], ensure_ascii=False))


def namespace_path(namespace: Sequence[str]) -> str:
    """The session_id of a namespace's items: a prefix of it is the path of a namespace prefix
    (labels hold no period: LangGraph refuses them)."""
    return "lg." + "".join(f"{label}." for label in namespace)


def check_ttl(ttl: object) -> float | None:
    """A put's time to live in minutes: a positive number, or None (the item never expires)."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl < 1e9:
        raise InvalidInputError("ttl", "must be a positive number of minutes, or None")
    return float(ttl)


def index_fields(index: Sequence[str] | IndexConfig | None) -> list[str]:
    """The value fields to embed: a list of paths, or LangGraph's ``IndexConfig`` (``fields``;
    the memory's embedder embeds, so ``embed`` and ``dims`` are refused)."""
    if index is None:
        return ["$"]
    if isinstance(index, Mapping):
        given = sorted(set(index) & {"embed", "dims"})
        if given:
            raise ValueError(
                f"index: {', '.join(given)} cannot be set here: items are embedded by the memory's "
                "embedder (EMBED_MODEL_TYPE); give only fields"
            )
        fields: Sequence[str] = index.get("fields") or ["$"]
    else:
        fields = index
    if isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields):
        raise ValueError("index: fields must be a list of non-empty paths, e.g. ['text', 'tags[*]']")
    return list(fields) or ["$"]


class PgMemStore(BaseStore):
    """A LangGraph store whose items are the long-term memories of one hello_pgmem user.

    ``index``: the value fields whose text is embedded and searched (a list of paths, or an
    ``IndexConfig`` with ``fields``; default: the whole value). A put's ``index`` overrides it;
    ``index=False`` keeps the item out of query searches. With ``known_at``, every read answers
    as the store knew the items at that time (a put keeps the value it replaces, a delete the
    value it removes), and the store refuses writes.
    """

    supports_ttl = True

    def __init__(
        self,
        memory: MemoryManager,
        index: Sequence[str] | IndexConfig | None = None,
        *,
        known_at: datetime | str | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        self.memory = memory
        self.fields = index_fields(index)
        self.known_at = None if known_at is None else check_timestamp(known_at, "known_at")
        self.ttl_config = ttl
        self._sweeper = Sweeper(self.sweep_ttl)

    # ------------------------------------------------------------------ expiry

    def sweep_ttl(self) -> int:
        """Forget the expired items now; how many."""
        return self.memory.items.sweep()

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep every ``sweep_interval_minutes`` (else the TTL config's, else 5) in a thread."""
        return self._sweeper.start(self.ttl_config, sweep_interval_minutes)

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        return self._sweeper.stop(timeout)

    def _expiry(self, refresh: bool = False) -> Expiry:
        omit = bool((self.ttl_config or {}).get("omit_expired", False))
        return Expiry(omit=omit, refresh=refresh and self.known_at is None)

    # ------------------------------------------------------------------ batch

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Each operation in order, each in its own transaction; results in the same order."""
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                results.append(self._get(op.namespace, op.key, op.refresh_ttl))
            elif isinstance(op, PutOp):
                if self.known_at is not None:
                    raise InvalidInputError("known_at", "a store that reads as of a time cannot write")
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

    def _text(self, value: dict[str, Any], fields: list[str]) -> str:
        """The item's search text, at most the memory's content cap (the value is kept whole)."""
        whole = json.dumps(value, ensure_ascii=False)
        pieces = [text for f in fields for text in ([whole] if f == "$" else get_text_at_path(value, f))]
        text = "\n".join(p for p in pieces if p.strip()) or whole
        return text[: self.memory.config.max_content_chars]

    def _put(self, op: PutOp) -> None:
        memory_id = item_id(op.namespace, op.key)
        if op.value is None:
            self.memory.items.delete(memory_id)
            return
        if not isinstance(op.value, Mapping):
            raise ValueError(f"value must be a dict, got {type(op.value).__name__}")
        value = dict(op.value)
        fields = self.fields if op.index is None or op.index is False else index_fields(list(op.index))
        content = self._text(value, fields)
        stored: dict[str, Any] = {"namespace": list(op.namespace), "key": op.key, "value": value}
        if op.index is False:
            stored["index"] = False
        ttl = check_ttl(op.ttl)
        if ttl is not None:
            stored["ttl"] = ttl
        try:  # JSON without NaN or NUL, as every memory's metadata
            metadata = check_metadata({"langgraph": stored})
        except InvalidInputError as exc:
            raise InvalidInputError("value", exc.rule) from exc
        importance = estimate_importance(content, metadata)
        path = namespace_path(op.namespace)
        if not self.memory.items.put(memory_id, content, importance, path, metadata, ttl):
            raise ValueError(f"key {op.key!r} in {op.namespace!r} names a memory that is not a store item")

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

    def _get(self, namespace: tuple[str, ...], key: str, refresh: bool = False) -> Item | None:
        rows = self.memory.items.get([item_id(namespace, key)], self.known_at, self._expiry(refresh))
        found = self._rows_to_items(rows)
        return found[0] if found else None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.limit < 0 or op.offset < 0:
            raise ValueError(f"limit and offset must be at least 0, got {op.limit} and {op.offset}")
        if op.limit == 0:
            return []
        predicate = compile_filter(op.filter, indexed_only=bool(op.query))
        where = (namespace_path(op.namespace_prefix), predicate.path, predicate.variables)
        ttl = self._expiry(op.refresh_ttl)
        if not op.query:
            rows = self.memory.items.listed(
                *where, limit=op.limit, offset=op.offset, known_at=self.known_at, ttl=ttl
            )
            return [
                SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at)
                for item in self._rows_to_items(rows)
            ]
        window = op.limit + op.offset
        if window > MAX_QUERY_WINDOW:
            raise ValueError(
                f"limit + offset must be at most {MAX_QUERY_WINDOW} for a query search, got {window}"
            )
        query = check_content(op.query[: self.memory.config.max_content_chars], field="query")
        return [
            SearchItem(
                namespace=tuple(row[1]["namespace"]),
                key=row[1]["key"],
                value=row[1]["value"],
                created_at=row[2],
                updated_at=row[3],
                score=float(row[4]),
            )
            for row in self.memory.items.search(
                *where, query=query, window=window, offset=op.offset, known_at=self.known_at, ttl=ttl
            )
        ]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = {tuple(namespace) for namespace in self.memory.items.namespaces(self._expiry())}
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
